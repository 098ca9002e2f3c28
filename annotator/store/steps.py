"""Reading steps: a page of them, one, how many, and one-line previews for the step list.

A stub (a trajectory known only from a label export) is stored as its row alone: ``n_steps``
keeps the original's length, so onsets keep their place, and the readers below answer with
placeholder steps instead of storing one row per original step (an export of 20,000
trajectories would otherwise write two million rows of the same sentence, and their index).
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlite_utils import Database

from annotator.errors import NotFound
from annotator.models import Step
from annotator.store.rows import decode, decode_one, json_columns, select
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


#: Step fields the steps table keeps under another name (``index`` and ``group`` are SQL words).
STEP_COLUMNS = {"index": "idx", "group": "grp"}
_STEP_COLS = select(Step, renamed=STEP_COLUMNS)
STEP_DECODE = json_columns("attributes", "raw")


def get_steps(db: Database, traj_id: str, start: int = 0, limit: int | None = None) -> list[Step]:
    """Steps ``start`` .. ``start + limit`` in order (all from ``start`` when limit is None)."""
    steps = decode(
        db.execute(
            f"SELECT {_STEP_COLS} FROM steps WHERE trajectory_id = ? AND idx >= ? ORDER BY idx LIMIT ?",
            [traj_id, start, -1 if limit is None else limit],
        ),
        Step,
        STEP_DECODE,
    )
    return steps or _stub_steps(db, traj_id, start, limit)


def get_step(db: Database, traj_id: str, index: int) -> Step:
    step = decode_one(
        db.execute(f"SELECT {_STEP_COLS} FROM steps WHERE trajectory_id = ? AND idx = ?", [traj_id, index]),
        Step,
        STEP_DECODE,
    )
    if step is None:
        stub = _stub_steps(db, traj_id, index, 1)
        if stub:
            return stub[0]
        raise NotFound(f"trajectory {traj_id!r} has no step {index}")
    return step


def count_steps(db: Database, traj_id: str) -> int:
    row = db.execute("SELECT n_steps FROM trajectories WHERE id = ?", [traj_id]).fetchone()
    if row is None:
        raise NotFound(f"no trajectory with id {traj_id!r}")
    return row[0]


def step_previews(db: Database, traj_id: str, start: int = 0, limit: int = 200) -> list[StepPreview]:
    """One-line previews of a window of steps, from ``step_heads`` (never the step contents)."""
    previews = decode(
        db.execute(
            f"SELECT {select(StepPreview, renamed=STEP_COLUMNS)} FROM step_heads"
            " WHERE trajectory_id = ? AND idx >= ? ORDER BY idx LIMIT ?",
            [traj_id, start, limit],
        ),
        StepPreview,
    )
    return previews or [
        StepPreview(index=s.index, kind=s.kind, preview=s.content, length=len(s.content))
        for s in _stub_steps(db, traj_id, start, limit)
    ]


def iter_step_fields(db: Database, traj_id: str, fields: tuple[str, ...], page: int = 5000, start: int = 0,
                     stop: int | None = None) -> Iterator[tuple]:
    """The named ``Step`` fields of every step in order (those with ``start <= index < stop``,
    to the last when ``stop`` is None), as plain tuples, a page at a time.

    For whole-run scans (the rule detectors) of trajectories too long to hold as models: memory
    stays at one page, and only the columns asked for are read (never ``raw``). ``fields`` must
    hold ``index``: pages follow each other by it.
    """
    at = fields.index("index")
    columns = ", ".join(STEP_COLUMNS.get(f, f) for f in fields)
    end = 2**63 - 1 if stop is None else stop
    while True:
        rows = db.execute(
            f"SELECT {columns} FROM steps WHERE trajectory_id = ? AND idx >= ? AND idx < ? ORDER BY idx LIMIT ?",
            [traj_id, start, end, page],
        ).fetchall()
        yield from rows
        if len(rows) < page:  # the last page: a query more would only find nothing (a short run's second)
            return
        start = rows[-1][at] + 1
