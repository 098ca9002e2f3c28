"""Merging labels from elsewhere (a label export) without writing what is already current.

Labels are append-only, so importing the same export twice would stack identical rows; this
keeps a re-import a no-op by comparing each incoming label with the current one of its cell.
An export holds hundreds of thousands of labels, so both sides are compared in stored form
(``labels.label_row``), as plain tuples read for many trajectories per query; the JSON columns
are decoded only where their text differs, so a label stored with other spacing is still the
same label.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import itemgetter

from sqlite_utils import Database

from annotator.store._json import loads
from annotator.store.labels import LABEL_COLUMN_NAMES as _COLUMNS

#: A label's content: every stored column but its cell (trajectory, annotator, mode), when it was
#: written, and the columns an imported label never sets.
_COMPARED = [c for c in _COLUMNS if c not in ("schema_version", "trajectory_id", "mode_id", "annotator", "retracts",
                                                "created_at")]
_JSON = [i for i, c in enumerate(_COMPARED) if c in ("evidence_steps", "extra")]
_compared = itemgetter(*(_COLUMNS.index(c) for c in _COMPARED))
_cell = itemgetter(*(_COLUMNS.index(c) for c in ("trajectory_id", "annotator", "mode_id")))
_trajectory = itemgetter(_COLUMNS.index("trajectory_id"))
_CHUNK = 500

Cell = tuple[str, str, str]


def _current(db: Database, trajectory_ids: Sequence[str]) -> dict[Cell, tuple]:
    """The compared columns of the current (not cleared) label of every cell of these trajectories."""
    out: dict[Cell, tuple] = {}
    cols = ", ".join(f"l.{c}" for c in _COMPARED)
    for start in range(0, len(trajectory_ids), _CHUNK):
        chunk = trajectory_ids[start:start + _CHUNK]
        rows = db.execute(
            f"SELECT s.trajectory_id, s.annotator, s.mode_id, {cols} FROM label_state s JOIN labels l"
            f" ON l.id = s.label_id WHERE l.verdict IS NOT NULL AND s.trajectory_id IN ({', '.join('?' for _ in chunk)})",
            chunk,
        )
        for tid, annotator, mode, *v in rows:
            out[(tid, annotator, mode)] = tuple(v)
    return out


def _same(a: tuple, b: tuple) -> bool:
    if a == b:
        return True
    decoded = [(loads(a[i]), loads(b[i])) for i in _JSON]
    rest = [i for i in range(len(a)) if i not in _JSON]
    return all(x == y for x, y in decoded) and all(a[i] == b[i] for i in rest)


def new_or_changed(db: Database, rows: Sequence[tuple]) -> list[tuple]:
    """The labels (stored form) whose content differs from the current label of their
    (trajectory, annotator, mode).

    Labels are taken in order, each compared with the current one or, when an earlier label of
    the same cell was taken, with that: the same as merging them one by one.
    """
    current = _current(db, list(dict.fromkeys(map(_trajectory, rows))))
    if not current and len(set(map(_cell, rows))) == len(rows):
        return list(rows)  # no cell has a label yet and none comes twice: each label is new
    out = []
    for row in rows:
        key, content = _cell(row), _compared(row)
        now = current.get(key)
        if now is None or not _same(now, content):
            out.append(row)
            current[key] = content  # compared only if the cell comes again
    return out
