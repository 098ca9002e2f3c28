"""Synthetic databases: many step-less trajectories, bare labels and reviews written at once.

The benchmarks measure reports over 100,000 trajectories; building a Trajectory or a Label
object per row would dominate generating them, so these write plain tuples with one
executemany each.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from itertools import chain

from sqlite_utils import Database

from annotator.models import SCHEMA_VERSION
from annotator.store.db import write
from annotator.store.labels import make_current


def insert_label_cells(
    db: Database,
    rows: Iterable[tuple[str, str, str, str, int | None]],
    *,
    provenance: str,
    taxonomy_hash: str | None = None,
    created_at: datetime | None = None,
) -> None:
    """Append many bare labels (trajectory_id, annotator, mode_id, verdict, onset_step) at once.

    Each becomes the current label of its cell. No evidence, quote or note: this is for
    generated data and bulk loads, where building a Label object per cell would dominate.
    """
    stamp = (created_at or datetime.now().astimezone()).isoformat()
    with write(db):
        start = db.execute("SELECT coalesce(max(id), 0) FROM labels").fetchone()[0]
        db.conn.executemany(
            "INSERT INTO labels (schema_version, trajectory_id, mode_id, annotator, verdict, onset_step,"
            " provenance, taxonomy_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((SCHEMA_VERSION, t, m, a, v, o, provenance, taxonomy_hash, stamp) for t, a, m, v, o in rows),
        )
        make_current(db, start)


def insert_trajectory_rows(db: Database, rows: Iterable[dict]) -> None:
    """Append many step-less trajectory rows (generated data): keys are trajectories columns."""
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return
    cols = list(first)
    sql = f"INSERT INTO trajectories ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
    with write(db):
        db.conn.executemany(sql, ([r[c] for c in cols] for r in chain([first], rows)))


def insert_reviews_done(db: Database, annotator: str, trajectory_ids: Iterable[str]) -> None:
    """Mark many trajectories done for an annotator at once (generated data, bulk loads)."""
    stamp = datetime.now().astimezone().isoformat()
    with write(db):
        db.conn.executemany(
            "INSERT OR REPLACE INTO review_state (trajectory_id, annotator, status, seconds_spent, updated_at)"
            " VALUES (?, ?, 'done', 0, ?)",
            ((t, annotator, stamp) for t in trajectory_ids),
        )
