"""The annotation queue: which trajectories an annotator has to do, how far they are, what is next.

Pure reads over the store, shared by the TUI's queue screen and anything else that needs the
same view (filters by system, model, review status and full-text search; progress; the next
unfinished trajectory). A queue lists its first ``QUEUE_LIMIT`` trajectories and says how many
match: a database of a million is narrowed by its filters and search, not scrolled.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlite_utils import Database

from annotator.annotating.assignments import PersonProgress, person_progress
from annotator.models import ReviewStatus
from annotator.store import assignments, review, suggestions
from annotator.store.report_tables import count_trajectories
from annotator.store.review_counts import status_counts
from annotator.store.trajectories import distinct_values, queue_page
from annotator.views import TrajectoryFilter, TrajectorySummary


@dataclass(frozen=True)
class QueueRow:
    """One trajectory as the queue lists it for one annotator."""

    summary: TrajectorySummary
    status: ReviewStatus
    pending_suggestions: int
    assigned: bool = False
    """Given to this annotator by ``mast assign``."""
    blind: bool = False
    """An overlap item (given to someone else too): worked blind, so its outcome and
    suggestions are not shown with it."""


@dataclass(frozen=True)
class Queue:
    """The first rows of a queue, and how many trajectories match its filters in all."""

    rows: list[QueueRow]
    total: int


#: Rows a queue lists at once.
QUEUE_LIMIT = 1000


@dataclass(frozen=True)
class AnnotatorProgress:
    """How far one annotator is over every trajectory in the database."""

    done: int
    in_progress: int
    total: int
    team: PersonProgress | None = None
    """Progress with the annotator's assignments, when they have some."""


def queue(
    db: Database,
    annotator: str,
    *,
    system: str | None = None,
    model: str | None = None,
    status: ReviewStatus | None = None,
    search: str | None = None,
    everything: bool = False,
    tag: str | None = None,
    unfinished: bool = False,
    ids: Sequence[str] | None = None,
    limit: int = QUEUE_LIMIT,
) -> Queue:
    """The trajectories matching the filters (the first ``limit``), with this annotator's status
    and waiting suggestions; ``search`` finds ids and titles that hold it (any case) and steps
    that hold every word of it; ``unfinished`` leaves out what the annotator has done; ``ids``
    keeps only those trajectories.

    An annotator with assignments sees only those, unless ``everything``: then the others follow.
    """
    flt = TrajectoryFilter(system=system, model=model, review_status=status, annotator=annotator, tag=tag, ids=ids)
    mine_only = not everything and has_assignments(db, annotator)
    listed, total = queue_page(db, flt, limit, text=search, assigned_to=annotator, assigned_only=mine_only,
                               unfinished_for=annotator if unfinished else None)
    ids = [t.id for t in listed]
    states = {s.trajectory_id: s.status for s in review.review_states(db, annotator, ids)}
    pending = suggestions.pending_counts(db, annotator, ids)
    mine = assignments.assigned_to(db, annotator, ids)
    shared = blind_items(db, annotator, ids)
    rows = [QueueRow(t, states.get(t.id, "not_started"), pending.get(t.id, 0), t.id in mine, t.id in shared)
            for t in listed]
    return Queue(rows, total)


def has_assignments(db: Database, annotator: str) -> bool:
    return assignments.has_assignments(db, annotator)


def blind_items(db: Database, annotator: str, ids: Collection[str] | None = None) -> set[str]:
    """The annotator's overlap items (of ``ids``, or all): also given to someone else, so opened
    blind to their labels."""
    return set(assignments.co_assigned(db, annotator, ids))


def progress(db: Database, annotator: str, mode_ids: Sequence[str] = ()) -> AnnotatorProgress:
    """Overall progress of the annotator over every trajectory in the database, and with their
    assignments (agreement over ``mode_ids``) when they have some."""
    counts = status_counts(db, annotator)
    team = person_progress(db, annotator, mode_ids) if has_assignments(db, annotator) else None
    return AnnotatorProgress(counts.get("done", 0), counts.get("in_progress", 0), count_trajectories(db), team)


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
