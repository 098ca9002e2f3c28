"""Combining several votes on a trajectory (``--samples K``, several ``--model``) into one verdict.

The verdict is the most common one (a tie is "unknown"), the confidence the fraction of votes
that agree with it, and every vote is kept with the label so that a reviewer sees the split.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TypeVar

from annotator.labelling.verdicts import ModeVerdict

T = TypeVar("T")


def group_by_mode(sources: Iterable[tuple[T, Sequence[ModeVerdict]]]) -> dict[str, list[tuple[T, ModeVerdict]]]:
    """Each mode's verdicts from ``(source, verdicts)`` pairs, with their source, in order of appearance."""
    by_mode: dict[str, list[tuple[T, ModeVerdict]]] = {}
    for source, verdicts in sources:
        for v in verdicts:
            by_mode.setdefault(v.mode_id, []).append((source, v))
    return by_mode


def earliest_onset(verdicts: Iterable[ModeVerdict]) -> ModeVerdict:
    """The verdict with the earliest onset step; one without an onset comes last."""
    return min(verdicts, key=lambda v: (v.onset_step is None, v.onset_step or 0))


def _vote_record(voter: str, v: ModeVerdict) -> dict:
    return {"voter": voter, "verdict": v.verdict, "onset_step": v.onset_step, "grounded": v.grounded}


def majority(votes: Sequence[tuple[str, Sequence[ModeVerdict]]]) -> list[ModeVerdict]:
    """One verdict per mode from ``(voter, verdicts)`` pairs; a single vote passes through."""
    if len(votes) == 1:
        return list(votes[0][1])
    out = []
    for mode_id, cast in group_by_mode(votes).items():
        counts = Counter(v.verdict for _, v in cast).most_common()
        top, n = counts[0]
        if len(counts) > 1 and counts[1][1] == n:
            top = "unknown"
        agreeing = [v for _, v in cast if v.verdict == top]
        if top == "present":
            grounded = [v for v in agreeing if v.grounded]
            best = earliest_onset(grounded or agreeing)
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
