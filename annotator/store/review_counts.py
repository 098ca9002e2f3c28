"""How many trajectories an annotator has in each review status, counted by SQLite.

The queue's progress line is redrawn on every reload and every poll that sees a change, so it
asks for counts instead of building every review state.
"""

from __future__ import annotations

from sqlite_utils import Database

from annotator.models import ReviewStatus


def status_counts(db: Database, annotator: str) -> dict[ReviewStatus, int]:
    """Stored review states of the annotator per status (statuses with none are absent)."""
    return dict(
        db.execute(
            "SELECT status, count(*) FROM review_state WHERE annotator = ? GROUP BY status", [annotator]
        ).fetchall()
    )
