"""The head of one step: what a viewer shows first, without reading a multi-megabyte content whole.

The annotation app moves between steps many times a minute; a tool output can be megabytes.
This reads the first ``views.HEAD_CHARS`` characters of the content (kept in ``step_heads`` for long
contents), no raw source record, and the full length; the whole step is still ``get_step``.
"""

from __future__ import annotations

from sqlite_utils import Database

from annotator.models import Step
from annotator.store.rows import decode_one, select
from annotator.store.steps import STEP_COLUMNS, STEP_DECODE, get_step

# coalesce() stops at the stored head, so a long content is never read; the raw record is not read at all.
_HEAD_COLS = select(Step, table="s", renamed={**STEP_COLUMNS, "content": "coalesce(h.head, s.content)"}, omit=("raw",))


def get_step_head(db: Database, traj_id: str, index: int) -> tuple[Step, int]:
    """Step ``index`` with its content cut to ``views.HEAD_CHARS`` characters and no raw record; and the full length."""
    cursor = db.execute(
        f"SELECT {_HEAD_COLS} FROM steps s JOIN step_heads h USING (trajectory_id, idx)"
        " WHERE s.trajectory_id = ? AND s.idx = ?",
        [traj_id, index],
    )
    step = decode_one(cursor, Step, STEP_DECODE)
    if step is None:
        # Only a stub's placeholder has no head row; anything else raises NotFound there.
        step = get_step(db, traj_id, index)
        return step, len(step.content)
    return step, db.execute(
        "SELECT length FROM step_heads WHERE trajectory_id = ? AND idx = ?", [traj_id, index]
    ).fetchone()[0]
