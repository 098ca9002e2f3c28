"""Assignments: which trajectories each person is to label (written by ``mast assign``).

Rows are only added, never moved: an assignment made earlier stays when new trajectories are
given out, so a person's queue does not change under them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from sqlite_utils import Database

from annotator.models import utcnow
from annotator.store._json import dumps
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


def progress_counts(db: Database, annotator: str) -> tuple[int, int, int, float, int]:
    """Of ``annotator``'s assignments: how many, done, in progress, the seconds spent on them, and
    how many are also given to someone else (overlap items)."""
    row = db.execute(
        "SELECT count(*), coalesce(sum(r.status = 'done'), 0), coalesce(sum(r.status = 'in_progress'), 0),"
        " coalesce(sum(r.seconds_spent), 0.0), coalesce(sum(EXISTS (SELECT 1 FROM assignments b"
        " WHERE b.trajectory_id = a.trajectory_id AND b.annotator != a.annotator)), 0)"
        " FROM assignments a LEFT JOIN review_state r ON r.trajectory_id = a.trajectory_id AND r.annotator = a.annotator"
        " WHERE a.annotator = ?",
        [annotator],
    ).fetchone()
    return int(row[0]), int(row[1]), int(row[2]), float(row[3]), int(row[4])


def overlap_cells(db: Database, annotator: str, mode_ids: Sequence[str]) -> tuple[Counter[tuple[bool, bool]], int]:
    """The 2×2 table of ``annotator`` against each partner on their shared items that both have
    marked done: per (item, partner, mode of ``mode_ids``), whether each has a current "present"
    label, counted; and the number of those items. One query: the queue's header asks for it
    at every refresh, and a label read per item took seconds over thousands of them."""
    present = ("EXISTS (SELECT 1 FROM label_state s JOIN labels l ON l.id = s.label_id WHERE s.trajectory_id = p.t"
               " AND s.annotator = {who} AND s.mode_id = m.value AND l.verdict = 'present')")
    pairs = (
        "SELECT a.trajectory_id AS t, b.annotator AS other FROM assignments a"
        " JOIN assignments b ON b.trajectory_id = a.trajectory_id AND b.annotator != a.annotator"
        " JOIN review_state r ON r.trajectory_id = a.trajectory_id AND r.annotator = a.annotator AND r.status = 'done'"
        " JOIN review_state q ON q.trajectory_id = b.trajectory_id AND q.annotator = b.annotator AND q.status = 'done'"
        " WHERE a.annotator = :me"
    )
    params = {"me": annotator, "modes": dumps(list(mode_ids))}
    cells = Counter({(bool(mine), bool(theirs)): n for mine, theirs, n in db.execute(
        f"SELECT {present.format(who=':me')}, {present.format(who='p.other')}, count(*)"
        f" FROM ({pairs}) p CROSS JOIN json_each(:modes) m GROUP BY 1, 2", params)})
    items = db.execute(f"SELECT count(DISTINCT t) FROM ({pairs})", params).fetchone()[0]
    return cells, items
