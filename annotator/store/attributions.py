"""Decisive-error attributions (who failed, at which step, why), as Who&When records them."""

from __future__ import annotations

from sqlite_utils import Database

from annotator.models import Attribution
from annotator.store._json import dumps
from annotator.store.db import write
from annotator.store.rows import decode, json_columns, select


def save_attribution(db: Database, attribution: Attribution) -> None:
    """Store (or replace) one annotator's attribution for a trajectory."""
    with write(db):
        db.execute(
            "INSERT OR REPLACE INTO attributions (trajectory_id, annotator, step, step_as_given, agent,"
            " reason, warnings, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                attribution.trajectory_id,
                attribution.annotator,
                attribution.step,
                attribution.step_as_given,
                attribution.agent,
                attribution.reason,
                dumps(attribution.warnings),
                attribution.created_at.isoformat(),
            ],
        )


def attributions(db: Database, trajectory_id: str | None = None) -> list[Attribution]:
    sql = f"SELECT {select(Attribution)} FROM attributions"
    params: list = []
    if trajectory_id is not None:
        sql += " WHERE trajectory_id = ?"
        params.append(trajectory_id)
    return decode(db.execute(sql + " ORDER BY trajectory_id, annotator", params), Attribution, json_columns("warnings"))
