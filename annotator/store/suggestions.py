"""Machine suggestions waiting for a person: how many each trajectory has, for the annotation queue.

A suggestion is the current "present" label of a run annotator (``run:<id>``) that the person
has neither accepted nor rejected yet (or whose decision they withdrew by undoing it). The queue shows the count per trajectory, so it is one
grouped query here rather than a label scan per row in the front end.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlite_utils import Database

from annotator.store.labels import WITHDRAWN
from annotator.store.rows import among


def pending_counts(db: Database, annotator: str, ids: Collection[str] | None = None) -> dict[str, int]:
    """Number of undecided suggestions per trajectory id (of ``ids``, or all), for ``annotator``."""
    within, more = among("s.trajectory_id", ids)
    rows = db.execute(
        "SELECT s.trajectory_id, count(*) FROM label_state s JOIN labels l ON l.id = s.label_id"
        " WHERE s.annotator LIKE 'run:%' AND l.verdict = 'present' AND coalesce("
        " (SELECT d.decision FROM suggestion_decisions d WHERE d.label_id = l.id AND d.annotator = ?"
        f" ORDER BY d.id DESC LIMIT 1), ?) = ?{within}"
        " GROUP BY s.trajectory_id",
        [annotator, WITHDRAWN, WITHDRAWN, *more],
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def seen_suggestions(db: Database, run_annotator: str, person: str) -> list[tuple[str, str | None, bool]]:
    """What ``person`` did with each suggestion of ``run_annotator`` they saw: per current
    "present" label of the run on a trajectory the person finished with suggestions in view
    (a review recorded as not blind), (standing decision or None, whether the person's current
    label on that mode is the accepted suggestion unchanged: same verdict and onset)."""
    rows = db.execute(
        "SELECT s.mode_id, (SELECT d.decision FROM suggestion_decisions d WHERE d.label_id = l.id"
        " AND d.annotator = ? ORDER BY d.id DESC LIMIT 1),"
        " m.provenance = 'accepted' AND json_extract(m.extra, '$.suggestion_label_id') = l.id"
        " AND m.verdict = l.verdict AND m.onset_step IS l.onset_step"
        " FROM label_state s JOIN labels l ON l.id = s.label_id"
        " JOIN review_state r ON r.trajectory_id = s.trajectory_id AND r.annotator = ? AND r.status = 'done'"
        " AND r.blind = 0"
        " LEFT JOIN label_state ms ON ms.trajectory_id = s.trajectory_id AND ms.annotator = ? AND ms.mode_id = s.mode_id"
        " LEFT JOIN labels m ON m.id = ms.label_id"
        " WHERE s.annotator = ? AND l.verdict = 'present'",
        [person, person, person, run_annotator],
    ).fetchall()
    return [(mode, None if decision in (None, WITHDRAWN) else decision, bool(same)) for mode, decision, same in rows]
