"""Assignments: which trajectories each person is to label (written by ``mast assign``).

Rows are only added, never moved: an assignment made earlier stays when new trajectories are
given out, so a person's queue does not change under them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from sqlite_utils import Database

from annotator.models import utcnow
from annotator.store.db import write
from annotator.store.rows import among


def assigned(db: Database) -> dict[str, list[str]]:
    """Every assignment: trajectory id -> the people it is given to (sorted)."""
    out: dict[str, list[str]] = {}
    for tid, who in db.execute("SELECT trajectory_id, annotator FROM assignments ORDER BY trajectory_id, annotator"):
        out.setdefault(tid, []).append(who)
    return out


def assigned_to(db: Database, annotator: str, ids: Collection[str] | None = None) -> set[str]:
    """Ids of the trajectories (of ``ids``, or all) given to ``annotator``."""
    within, more = among("trajectory_id", ids)
    return {r[0] for r in db.execute(f"SELECT trajectory_id FROM assignments WHERE annotator = ?{within}",
                                     [annotator, *more])}


def has_assignments(db: Database, annotator: str) -> bool:
    """Whether ``annotator`` has been given any trajectory."""
    return db.execute("SELECT 1 FROM assignments WHERE annotator = ? LIMIT 1", [annotator]).fetchone() is not None


def co_assigned(db: Database, annotator: str, ids: Collection[str] | None = None) -> dict[str, list[str]]:
    """Of the annotator's trajectories (of ``ids``, or all), those also given to someone else: id -> the others."""
    out: dict[str, list[str]] = {}
    within, more = among("a.trajectory_id", ids)
    rows = db.execute(
        "SELECT a.trajectory_id, b.annotator FROM assignments a JOIN assignments b"
        f" ON b.trajectory_id = a.trajectory_id AND b.annotator != a.annotator WHERE a.annotator = ?{within}"
        " ORDER BY a.trajectory_id, b.annotator",
        [annotator, *more],
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
