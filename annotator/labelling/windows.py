"""Fitting long trajectories into a judge's context without losing their tail.

The original MAST judge cuts a long trace at a character limit and drops the rest silently.
Here every request has a token budget: huge step contents (tool outputs, logs) are clipped with
a visible marker, and a trajectory still over budget is cut into overlapping windows of whole
steps, each labelled on its own; ``merge_windows`` then combines them (present if any window
finds the mode grounded, the earliest onset wins).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from annotator.labelling.verdicts import ModeVerdict
from annotator.labelling.voting import earliest_onset, group_by_mode

#: Characters of one step's content shown to a judge before the middle is clipped.
CLIP_CHARS = 6000
#: Characters per token assumed when no tokenizer is known for the model (errs on the large side).
CHARS_PER_TOKEN = 3.5
#: Steps shared by neighbouring windows, so a failure spanning a cut is seen whole once.
OVERLAP_STEPS = 2


def clip(text: str, limit: int = CLIP_CHARS) -> str:
    """``text`` with its middle replaced by a visible marker when it is longer than ``limit``."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[… {len(text) - head - tail:,} characters clipped …]\n{text[-tail:]}"


@cache
def _encoding(model: str):
    import tiktoken

    try:
        return tiktoken.encoding_for_model(model)
    except Exception:  # noqa: BLE001 - unknown model (KeyError) or a failed download (requests' errors)
        return None


class TokenCounter:
    """Tokens of a text for a model: exact with tiktoken where it knows the model, else a
    character estimate.

    tiktoken downloads a vocabulary on first use, into the folder its own environment variables
    name (the settings' ``tiktoken_cache_dir``, handed in as ``vocab_dir``). It is used only when
    that folder already holds one, so that counting tokens never reaches out to the network;
    without a ``vocab_dir`` every count is the estimate.
    """

    def __init__(self, vocab_dir: Path | None = None):
        self.exact = vocab_dir is not None and vocab_dir.is_dir() and any(vocab_dir.iterdir())

    def __call__(self, text: str, model: str | None) -> int:
        enc = _encoding(model) if self.exact and model else None
        if enc is not None:
            return len(enc.encode(text, disallowed_special=()))
        return math.ceil(len(text) / CHARS_PER_TOKEN)


def plan_windows(sizes: Sequence[int], budget: int, overlap: int = OVERLAP_STEPS) -> list[range]:
    """Split steps of the given token ``sizes`` into windows of at most ``budget`` tokens.

    Windows are ranges of positions, each starting ``overlap`` steps before the previous one
    ended; a single step larger than the budget gets a window of its own (its content is
    already clipped). One window covers everything when it fits.
    """
    n = len(sizes)
    if n == 0 or sum(sizes) <= budget:
        return [range(0, n)]
    windows: list[range] = []
    start = 0
    while start < n:
        stop, used = start, 0
        while stop < n and (stop == start or used + sizes[stop] <= budget):
            used += sizes[stop]
            stop += 1
        windows.append(range(start, stop))
        if stop >= n:
            break
        start = max(stop - overlap, start + 1)
    return windows


def merge_windows(per_window: Sequence[Sequence[ModeVerdict]]) -> list[ModeVerdict]:
    """One verdict per mode from the verdicts of every window of a trajectory.

    Present if a window found it present and grounded (earliest onset among those wins);
    else present-but-ungrounded if any window said present; else absent if any window said
    absent; else unknown.
    """
    if len(per_window) == 1:
        return list(per_window[0])
    merged = []
    for found in group_by_mode(enumerate(per_window)).values():
        vs = [v for _, v in found]
        present = [v for v in vs if v.verdict == "present"]
        grounded = [v for v in present if v.grounded]
        pool = grounded or present
        if pool:
            best = earliest_onset(pool)
            evidence = sorted({i for v in pool for i in v.evidence_steps} - {best.onset_step})
            merged.append(best.model_copy(update={"evidence_steps": evidence}))
        elif any(v.verdict == "absent" for v in vs):
            merged.append(next(v for v in vs if v.verdict == "absent"))
        else:
            merged.append(vs[0])
    return merged
