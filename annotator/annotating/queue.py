"""The annotation queue: which trajectories an annotator has to do, how far they are, what is next.

Pure reads over the store, shared by the TUI's queue screen and anything else that needs the
same view (filters by system, model, review status and full-text search; progress; the next
unfinished trajectory).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sqlite_utils import Database

from annotator.annotating.assignments import PersonProgress, person_progress
from annotator.models import ReviewStatus
from annotator.store import assignments, review, suggestions
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
    assigned: bool = False
    """Given to this annotator by ``mast assign``."""
    blind: bool = False
    """An overlap item (given to someone else too): worked blind, so its outcome and
    suggestions are not shown with it."""


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
) -> list[QueueRow]:
    """The trajectories matching the filters, with this annotator's status and waiting suggestions.

    An annotator with assignments sees only those, unless ``everything``: then the others follow.
    """
    flt = TrajectoryFilter(system=system, model=model, review_status=status, annotator=annotator, tag=tag)
    listed = list_trajectories(db, flt)
    if search:
        listed = _matching(db, listed, flt, search)
    states = {s.trajectory_id: s.status for s in review.review_states(db, annotator)}
    pending = suggestions.pending_counts(db, annotator)
    mine = assignments.assigned_to(db, annotator)
    shared = blind_items(db, annotator)
    rows = [
        QueueRow(t, states.get(t.id, "not_started"), pending.get(t.id, 0), t.id in mine, t.id in shared)
        for t in listed
        if everything or not mine or t.id in mine
    ]
    return sorted(rows, key=lambda r: not r.assigned)


def _matching(db: Database, listed: list[TrajectorySummary], flt: TrajectoryFilter, search: str) -> list[TrajectorySummary]:
    """The listed trajectories whose id or title holds ``search`` (any case), or whose steps hold
    every word of it (full-text)."""
    in_steps = {t.id for t in list_trajectories(db, flt.model_copy(update={"search": search}))}
    needle = search.casefold()
    return [t for t in listed if t.id in in_steps or needle in t.id.casefold() or needle in (t.title or "").casefold()]


def has_assignments(db: Database, annotator: str) -> bool:
    return bool(assignments.assigned_to(db, annotator))


def blind_items(db: Database, annotator: str) -> set[str]:
    """The annotator's overlap items: also given to someone else, so opened blind to their labels."""
    return set(assignments.co_assigned(db, annotator))


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
