"""Reading steps: a page of them, one, how many, and one-line previews for the step list.

A stub (a trajectory known only from a label export) is stored as its row alone: ``n_steps``
keeps the original's length, so onsets keep their place, and the readers below answer with
placeholder steps instead of storing one row per original step (an export of 20,000
trajectories would otherwise write two million rows of the same sentence, and their index).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlite_utils import Database

from annotator.errors import NotFound
from annotator.models import Step
from annotator.store._json import loads
from annotator.views import StepPreview

#: Content hash of a stub: never equal to a real trajectory's, so a real import replaces it.
STUB_HASH = "label-export-stub"
#: What each placeholder step of a stub says.
PLACEHOLDER = "(step not included in the label export)"


def _stub_steps(db: Database, traj_id: str, start: int, limit: int | None) -> list[Step]:
    """Placeholder steps ``start`` .. ``start + limit`` if ``traj_id`` is a stub, else none.

    The one fallback behind every step reader, so a stub reads the same everywhere.
    """
    row = db.execute(
        "SELECT n_steps FROM trajectories WHERE id = ? AND content_hash = ?", [traj_id, STUB_HASH]
    ).fetchone()
    if row is None:
        return []
    end = row[0] if limit is None else min(row[0], start + limit)
    return [
        Step(index=i, id=f"{traj_id}:{i}", kind="event", content=PLACEHOLDER) for i in range(max(start, 0), end)
    ]


_STEP_COLS = (
    "idx, id, agent, role, recipient, kind, content, tool_name, tool_args, call_id, link, parent,"
    " grp, timestamp, tokens_in, tokens_out, attributes, raw"
)


def _step(row: Sequence) -> Step:
    return Step(
        index=row[0],
        id=row[1],
        agent=row[2],
        role=row[3],
        recipient=row[4],
        kind=row[5],
        content=row[6],
        tool_name=row[7],
        tool_args=row[8],
        call_id=row[9],
        link=row[10],
        parent=row[11],
        group=row[12],
        timestamp=row[13],
        tokens_in=row[14],
        tokens_out=row[15],
        attributes=loads(row[16], {}),
        raw=loads(row[17]),
    )


def get_steps(db: Database, traj_id: str, start: int = 0, limit: int | None = None) -> list[Step]:
    """Steps ``start`` .. ``start + limit`` in order (all from ``start`` when limit is None)."""
    rows = db.execute(
        f"SELECT {_STEP_COLS} FROM steps WHERE trajectory_id = ? AND idx >= ? ORDER BY idx LIMIT ?",
        [traj_id, start, -1 if limit is None else limit],
    ).fetchall()
    if not rows:
        return _stub_steps(db, traj_id, start, limit)
    return [_step(r) for r in rows]


def get_step(db: Database, traj_id: str, index: int) -> Step:
    row = db.execute(
        f"SELECT {_STEP_COLS} FROM steps WHERE trajectory_id = ? AND idx = ?", [traj_id, index]
    ).fetchone()
    if row is None:
        stub = _stub_steps(db, traj_id, index, 1)
        if stub:
            return stub[0]
        raise NotFound(f"trajectory {traj_id!r} has no step {index}")
    return _step(row)


def count_steps(db: Database, traj_id: str) -> int:
    row = db.execute("SELECT n_steps FROM trajectories WHERE id = ?", [traj_id]).fetchone()
    if row is None:
        raise NotFound(f"no trajectory with id {traj_id!r}")
    return row[0]


def step_previews(db: Database, traj_id: str, start: int = 0, limit: int = 200) -> list[StepPreview]:
    """One-line previews of a window of steps, from ``step_heads`` (never the step contents)."""
    rows = db.execute(
        "SELECT idx, agent, kind, tool_name, preview, length FROM step_heads"
        " WHERE trajectory_id = ? AND idx >= ? ORDER BY idx LIMIT ?",
        [traj_id, start, limit],
    ).fetchall()
    if not rows:
        return [
            StepPreview(index=s.index, kind=s.kind, preview=s.content, length=len(s.content))
            for s in _stub_steps(db, traj_id, start, limit)
        ]
    return [
        StepPreview(index=r[0], agent=r[1], kind=r[2], tool_name=r[3], preview=r[4], length=r[5])
        for r in rows
    ]
