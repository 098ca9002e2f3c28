"""The annotation queue: which trajectories an annotator has to do, how far they are, what is next.

Pure reads over the store, shared by the TUI's queue screen and anything else that needs the
same view (filters by system, model, review status and full-text search; progress; the next
unfinished trajectory).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlite_utils import Database

from annotator.models import ReviewStatus
from annotator.store import review, suggestions
from annotator.store.report_tables import count_trajectories
from annotator.store.review_counts import status_counts
from annotator.store.trajectories import distinct_values, list_trajectories
from annotator.views import TrajectoryFilter, TrajectorySummary


@dataclass(frozen=True)
class QueueRow:
    """One trajectory as the queue lists it for one annotator."""

    summary: TrajectorySummary
    status: ReviewStatus
    pending_suggestions: int


@dataclass(frozen=True)
class AnnotatorProgress:
    """How far one annotator is over every trajectory in the database."""

    done: int
    in_progress: int
    total: int


def queue(
    db: Database,
    annotator: str,
    *,
    system: str | None = None,
    model: str | None = None,
    status: ReviewStatus | None = None,
    search: str | None = None,
    tag: str | None = None,
) -> list[QueueRow]:
    """The trajectories matching the filters, with this annotator's status and waiting suggestions."""
    flt = TrajectoryFilter(
        system=system, model=model, search=search or None, review_status=status, annotator=annotator, tag=tag
    )
    states = {s.trajectory_id: s.status for s in review.review_states(db, annotator)}
    pending = suggestions.pending_counts(db, annotator)
    return [
        QueueRow(t, states.get(t.id, "not_started"), pending.get(t.id, 0))
        for t in list_trajectories(db, flt)
    ]


def progress(db: Database, annotator: str) -> AnnotatorProgress:
    """Overall progress of the annotator over every trajectory in the database."""
    counts = status_counts(db, annotator)
    return AnnotatorProgress(counts.get("done", 0), counts.get("in_progress", 0), count_trajectories(db))


def filter_choices(db: Database, column: Literal["system", "model"]) -> list[str]:
    """The values the queue's filter on ``column`` offers (those some trajectory has)."""
    return distinct_values(db, column)


def next_unfinished(rows: list[QueueRow], after: str | None = None) -> QueueRow | None:
    """The first row not done, searching forward from the row ``after`` (wrapping around)."""
    if not rows:
        return None
    ids = [r.summary.id for r in rows]
    start = ids.index(after) + 1 if after in ids else 0
    for row in rows[start:] + rows[:start]:
        if row.status != "done":
            return row
    return None
