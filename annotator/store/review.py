"""Review state: where each annotator stands with each trajectory, with an append-only history."""

from __future__ import annotations

from collections.abc import Collection

from sqlite_utils import Database

from annotator.models import ReviewState, ReviewStatus, utcnow
from annotator.store.db import write
from annotator.store.rows import among


def get_review(db: Database, trajectory_id: str, annotator: str) -> ReviewState:
    """The annotator's state for a trajectory ("not_started" if never touched)."""
    row = db.execute(
        "SELECT status, seconds_spent, updated_at FROM review_state WHERE trajectory_id = ? AND annotator = ?",
        [trajectory_id, annotator],
    ).fetchone()
    if row is None:
        return ReviewState(trajectory_id=trajectory_id, annotator=annotator)
    return ReviewState(
        trajectory_id=trajectory_id, annotator=annotator, status=row[0], seconds_spent=row[1], updated_at=row[2]
    )


def set_review(
    db: Database,
    trajectory_id: str,
    annotator: str,
    status: ReviewStatus,
    *,
    add_seconds: float = 0.0,
    blind: bool | None = None,
) -> ReviewState:
    """Change the status (and add time spent); every change is also logged in review_events.

    ``blind`` says whether the writing session hid suggestions and other people's labels: a
    review stays blind only while every write to it was (None: not known, leaves it as it is).
    """
    now = utcnow().isoformat()
    flag = None if blind is None else int(blind)
    with write(db):
        db.execute(
            "INSERT INTO review_state (trajectory_id, annotator, status, seconds_spent, updated_at, blind)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (trajectory_id, annotator) DO UPDATE SET"
            " status = excluded.status, seconds_spent = review_state.seconds_spent + excluded.seconds_spent,"
            " updated_at = excluded.updated_at, blind = CASE WHEN excluded.blind IS NULL THEN review_state.blind"
            " WHEN excluded.blind = 0 THEN 0 ELSE min(review_state.blind, excluded.blind) END",
            [trajectory_id, annotator, status, max(add_seconds, 0.0), now, flag],
        )
        db.execute(
            "INSERT INTO review_events (trajectory_id, annotator, status, created_at, blind) VALUES (?, ?, ?, ?, ?)",
            [trajectory_id, annotator, status, now, flag],
        )
    return get_review(db, trajectory_id, annotator)


def blind_reviews(db: Database, annotators: list[str]) -> list[tuple[str, str, bool | None]]:
    """(trajectory id, annotator, worked blind: True, False or None if not recorded) of the
    annotators' finished reviews."""
    if not annotators:
        return []
    marks = ", ".join("?" for _ in annotators)
    rows = db.execute(
        f"SELECT trajectory_id, annotator, blind FROM review_state WHERE status = 'done' AND annotator IN ({marks})"
        " ORDER BY trajectory_id, annotator",
        annotators,
    )
    return [(t, a, None if b is None else bool(b)) for t, a, b in rows]


def review_states(db: Database, annotator: str | None = None, ids: Collection[str] | None = None) -> list[ReviewState]:
    """Every stored review state (of one annotator, or of all; on the trajectories ``ids``, or all)."""
    sql = "SELECT trajectory_id, annotator, status, seconds_spent, updated_at FROM review_state WHERE 1"
    params: list = []
    if annotator is not None:
        sql += " AND annotator = ?"
        params.append(annotator)
    within, more = among("trajectory_id", ids)
    sql += within
    params += more
    return [
        ReviewState(trajectory_id=r[0], annotator=r[1], status=r[2], seconds_spent=r[3], updated_at=r[4])
        for r in db.execute(sql + " ORDER BY trajectory_id, annotator", params)
    ]


def finished_by(db: Database, annotator: str) -> set[str]:
    """Ids of the trajectories an annotator has marked done."""
    return {
        r[0]
        for r in db.execute(
            "SELECT trajectory_id FROM review_state WHERE annotator = ? AND status = 'done'", [annotator]
        )
    }
