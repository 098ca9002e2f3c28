"""Machine suggestions waiting for a person: how many each trajectory has, for the annotation queue.

A suggestion is the current "present" label of a run annotator (``run:<id>``) that the person
has neither accepted nor rejected yet (or whose decision they withdrew by undoing it). The queue shows the count per trajectory, so it is one
grouped query here rather than a label scan per row in the front end.
"""

from __future__ import annotations

from sqlite_utils import Database

from annotator.store.labels import WITHDRAWN


def pending_counts(db: Database, annotator: str) -> dict[str, int]:
    """Number of undecided suggestions per trajectory id, for ``annotator``."""
    rows = db.execute(
        "SELECT s.trajectory_id, count(*) FROM label_state s JOIN labels l ON l.id = s.label_id"
        " WHERE s.annotator LIKE 'run:%' AND l.verdict = 'present' AND coalesce("
        " (SELECT d.decision FROM suggestion_decisions d WHERE d.label_id = l.id AND d.annotator = ?"
        " ORDER BY d.id DESC LIMIT 1), ?) = ?"
        " GROUP BY s.trajectory_id",
        [annotator, WITHDRAWN, WITHDRAWN],
    ).fetchall()
    return {r[0]: r[1] for r in rows}
