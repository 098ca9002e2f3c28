"""Assignments: which trajectories each person is to label (written by ``mast assign``).

Rows are only added, never moved: an assignment made earlier stays when new trajectories are
given out, so a person's queue does not change under them.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlite_utils import Database

from annotator.models import utcnow
from annotator.store.db import write


def assigned(db: Database) -> dict[str, list[str]]:
    """Every assignment: trajectory id -> the people it is given to (sorted)."""
    out: dict[str, list[str]] = {}
    for tid, who in db.execute("SELECT trajectory_id, annotator FROM assignments ORDER BY trajectory_id, annotator"):
        out.setdefault(tid, []).append(who)
    return out


def assigned_to(db: Database, annotator: str) -> set[str]:
    """Ids of the trajectories given to ``annotator``."""
    return {r[0] for r in db.execute("SELECT trajectory_id FROM assignments WHERE annotator = ?", [annotator])}


def co_assigned(db: Database, annotator: str) -> dict[str, list[str]]:
    """Of the annotator's trajectories, those also given to someone else: id -> the others."""
    out: dict[str, list[str]] = {}
    rows = db.execute(
        "SELECT a.trajectory_id, b.annotator FROM assignments a JOIN assignments b"
        " ON b.trajectory_id = a.trajectory_id AND b.annotator != a.annotator WHERE a.annotator = ?"
        " ORDER BY a.trajectory_id, b.annotator",
        [annotator],
    )
    for tid, other in rows:
        out.setdefault(tid, []).append(other)
    return out


def add_assignments(db: Database, pairs: Iterable[tuple[str, str]]) -> int:
    """Give each (trajectory id, annotator) pair; pairs already given are kept as they were.
    Returns how many were new."""
    now = utcnow().isoformat()
    rows = [(tid, who, now) for tid, who in pairs]
    with write(db):
        before = db.execute("SELECT count(*) FROM assignments").fetchone()[0]
        db.conn.executemany(
            "INSERT OR IGNORE INTO assignments (trajectory_id, annotator, assigned_at) VALUES (?, ?, ?)", rows
        )
        return db.execute("SELECT count(*) FROM assignments").fetchone()[0] - before
