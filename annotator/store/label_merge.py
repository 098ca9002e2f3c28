"""Merging labels from elsewhere (a label export) without writing what is already current.

Labels are append-only, so importing the same export twice would stack identical rows; this
keeps a re-import a no-op by comparing each incoming label with the current one of its cell.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlite_utils import Database

from annotator.models import Label
from annotator.store.labels import current_labels

_COMPARED = ("verdict", "onset_step", "evidence_steps", "quote", "note", "rationale", "confidence", "provenance",
             "run_id", "grounded", "taxonomy_hash", "extra")


def new_or_changed(db: Database, labels: Sequence[Label]) -> list[Label]:
    """The labels whose content differs from the current label of their (trajectory, annotator, mode)."""
    current: dict[tuple[str, str, str], Label] = {}
    for tid in {lab.trajectory_id for lab in labels}:
        for lab in current_labels(db, tid):
            current[(lab.trajectory_id, lab.annotator, lab.mode_id)] = lab
    out = []
    for lab in labels:
        now = current.get((lab.trajectory_id, lab.annotator, lab.mode_id))
        if now is None or any(getattr(now, f) != getattr(lab, f) for f in _COMPARED):
            out.append(lab)
    return out
