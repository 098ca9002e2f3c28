"""Merging labels from elsewhere (a label export) without writing what is already current.

Labels are append-only, so importing the same export twice would stack identical rows; this
keeps a re-import a no-op by comparing each incoming label with the current one of its cell.
An export holds hundreds of thousands of labels, so the current ones are read as plain tuples
for many trajectories per query, never as one model object each.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

from sqlite_utils import Database

from annotator.models import Label
from annotator.store.report_tables import LABEL_FIELDS, decode_label

#: A label's content: every stored field but its cell (trajectory, mode) and when it was written.
_COMPARED = tuple(f for f in LABEL_FIELDS if f not in ("trajectory_id", "mode_id", "created_at"))
_CHUNK = 500
_compared = attrgetter(*_COMPARED)

Cell = tuple[str, str, str]


def _current(db: Database, trajectory_ids: Sequence[str]) -> dict[Cell, tuple]:
    """The compared fields of the current (not cleared) label of every cell of these trajectories."""
    out: dict[Cell, tuple] = {}
    cols = ", ".join(f"l.{f}" for f in _COMPARED)
    for start in range(0, len(trajectory_ids), _CHUNK):
        chunk = trajectory_ids[start:start + _CHUNK]
        rows = db.execute(
            f"SELECT s.trajectory_id, s.annotator, s.mode_id, {cols} FROM label_state s JOIN labels l"
            f" ON l.id = s.label_id WHERE l.verdict IS NOT NULL AND s.trajectory_id IN ({', '.join('?' for _ in chunk)})",
            chunk,
        )
        for tid, annotator, mode, *v in rows:
            out[(tid, annotator, mode)] = tuple(decode_label(dict(zip(_COMPARED, v, strict=True))).values())
    return out


def new_or_changed(db: Database, labels: Sequence[Label]) -> list[Label]:
    """The labels whose content differs from the current label of their (trajectory, annotator, mode).

    Labels are taken in order, each compared with the current one or, when an earlier label of
    the same cell was taken, with that: the same as merging them one by one.
    """
    current: dict[Cell, tuple | Label] = _current(db, list(dict.fromkeys(lab.trajectory_id for lab in labels)))
    out = []
    for lab in labels:
        key = (lab.trajectory_id, lab.annotator, lab.mode_id)
        now = current.get(key)
        if now is None or (now if isinstance(now, tuple) else _compared(now)) != _compared(lab):
            out.append(lab)
            current[key] = lab  # compared only if the cell comes again
    return out
