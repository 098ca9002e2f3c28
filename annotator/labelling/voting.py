"""Combining several votes on a trajectory (``--samples K``, several ``--model``) into one verdict.

The verdict is the most common one (a tie is "unknown"), the confidence the fraction of votes
that agree with it, and every vote is kept with the label so that a reviewer sees the split.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from annotator.labelling.verdicts import ModeVerdict


def _vote_record(voter: str, v: ModeVerdict) -> dict:
    return {"voter": voter, "verdict": v.verdict, "onset_step": v.onset_step, "grounded": v.grounded}


def majority(votes: Sequence[tuple[str, Sequence[ModeVerdict]]]) -> list[ModeVerdict]:
    """One verdict per mode from ``(voter, verdicts)`` pairs; a single vote passes through."""
    if len(votes) == 1:
        return list(votes[0][1])
    by_mode: dict[str, list[tuple[str, ModeVerdict]]] = {}
    for voter, verdicts in votes:
        for v in verdicts:
            by_mode.setdefault(v.mode_id, []).append((voter, v))
    out = []
    for mode_id, cast in by_mode.items():
        counts = Counter(v.verdict for _, v in cast).most_common()
        top, n = counts[0]
        if len(counts) > 1 and counts[1][1] == n:
            top = "unknown"
        agreeing = [v for _, v in cast if v.verdict == top]
        if top == "present":
            grounded = [v for v in agreeing if v.grounded]
            best = min(grounded or agreeing, key=lambda v: (v.onset_step is None, v.onset_step or 0))
        elif agreeing:
            best = agreeing[0]
        else:
            best = ModeVerdict(mode_id=mode_id, verdict="unknown")
        out.append(
            best.model_copy(
                update={
                    "verdict": top,
                    "confidence": len(agreeing) / len(cast),
                    "votes": [_vote_record(voter, v) for voter, v in cast],
                }
            )
        )
    return out
