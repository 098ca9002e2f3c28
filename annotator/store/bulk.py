"""Bulk reads and writes for the reports: whole label sources as compact per-trajectory rows.

A report over 100,000 trajectories touches millions of (trajectory, annotator, mode) cells.
Reading those as one Python tuple per cell costs seconds and gigabytes, so the queries here
let SQLite fold a trajectory's verdicts into three bit masks (present, absent, unknown; bit i
is the i-th mode asked for) and return one row per trajectory. Onsets are read only for
present cells. The bulk insert at the end exists for generating large databases (benchmarks)
without a Python call per label.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import chain

from sqlite_utils import Database

from annotator.errors import ReportError
from annotator.models import SCHEMA_VERSION
from annotator.store.db import write
from annotator.store.trajectories import TrajectoryFilter, _where

#: Bit masks are SQLite 64-bit integers; one bit per mode.
MAX_MODES = 62


def _modes_cte(mode_ids: Sequence[str]) -> tuple[str, list]:
    if len(mode_ids) > MAX_MODES:
        raise ReportError(f"a report handles at most {MAX_MODES} modes, the codebook has {len(mode_ids)}")
    values = ", ".join("(?, ?)" for _ in mode_ids)
    params: list = []
    for i, m in enumerate(mode_ids):
        params.extend([m, i])
    return f"WITH m(mode_id, idx) AS (VALUES {values})", params


def trajectory_rows(
    db: Database, flt: TrajectoryFilter | None = None, tag: str | None = None
) -> list[tuple]:
    """(id, system, model, benchmark, outcome, n_steps, title) of the trajectories the filter selects.

    ``tag`` selects trajectories whose metadata ``tags`` list holds it.
    """
    where, params = _where(flt or TrajectoryFilter())
    if tag is not None:
        where.append(
            "EXISTS (SELECT 1 FROM json_each(t.metadata, '$.tags') j WHERE j.value = ?)"
        )
        params.append(tag)
    sql = "SELECT t.id, t.system, t.model, t.benchmark, t.outcome, t.n_steps, t.title FROM trajectories t"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return db.execute(sql + " ORDER BY t.id", params).fetchall()


def count_trajectories(db: Database) -> int:
    return db.execute("SELECT count(*) FROM trajectories").fetchone()[0]


def verdict_masks(db: Database, annotator: str, mode_ids: Sequence[str]) -> list[tuple[str, int, int, int]]:
    """Per trajectory the annotator has current verdicts for: (id, present, absent, unknown) masks."""
    cte, params = _modes_cte(mode_ids)
    sql = (
        f"{cte} SELECT s.trajectory_id,"
        " sum(CASE l.verdict WHEN 'present' THEN 1 << m.idx ELSE 0 END),"
        " sum(CASE l.verdict WHEN 'absent' THEN 1 << m.idx ELSE 0 END),"
        " sum(CASE l.verdict WHEN 'unknown' THEN 1 << m.idx ELSE 0 END)"
        " FROM label_state s JOIN m ON m.mode_id = s.mode_id JOIN labels l ON l.id = s.label_id"
        " WHERE s.annotator = ? AND l.verdict IS NOT NULL GROUP BY s.trajectory_id"
    )
    return db.execute(sql, [*params, annotator]).fetchall()


def present_onsets(db: Database, annotator: str, mode_ids: Sequence[str]) -> list[tuple[str, int, int]]:
    """(trajectory id, mode index, onset step) of the annotator's present labels that give an onset."""
    cte, params = _modes_cte(mode_ids)
    sql = (
        f"{cte} SELECT s.trajectory_id, m.idx, l.onset_step"
        " FROM label_state s JOIN m ON m.mode_id = s.mode_id JOIN labels l ON l.id = s.label_id"
        " WHERE s.annotator = ? AND l.verdict = 'present' AND l.onset_step IS NOT NULL"
    )
    return db.execute(sql, [*params, annotator]).fetchall()


def labels_outside(db: Database, annotator: str, mode_ids: Sequence[str]) -> int:
    """How many current verdicts of the annotator name a mode the codebook does not have."""
    marks = ", ".join("?" for _ in mode_ids)
    return db.execute(
        "SELECT count(*) FROM label_state s JOIN labels l ON l.id = s.label_id"
        f" WHERE s.annotator = ? AND l.verdict IS NOT NULL AND s.mode_id NOT IN ({marks})",
        [annotator, *mode_ids],
    ).fetchone()[0]


def annotator_profile(db: Database, annotator: str) -> dict[str, int]:
    """How an annotator's current labels came to be: provenance -> count, plus review states."""
    out = {
        r[0]: r[1]
        for r in db.execute(
            "SELECT l.provenance, count(*) FROM label_state s JOIN labels l ON l.id = s.label_id"
            " WHERE s.annotator = ? GROUP BY l.provenance",
            [annotator],
        )
    }
    out["review_states"] = db.execute(
        "SELECT count(*) FROM review_state WHERE annotator = ?", [annotator]
    ).fetchone()[0]
    return out


def review_status_counts(db: Database, annotator: str) -> dict[str, list[str]]:
    """Trajectory ids per review status of one annotator."""
    out: dict[str, list[str]] = {}
    for tid, status in db.execute(
        "SELECT trajectory_id, status FROM review_state WHERE annotator = ?", [annotator]
    ):
        out.setdefault(status, []).append(tid)
    return out


def reviewers(db: Database) -> list[str]:
    """Annotators who have marked at least one trajectory done (the people consensus is over)."""
    return [
        r[0]
        for r in db.execute(
            "SELECT DISTINCT annotator FROM review_state WHERE status = 'done' ORDER BY annotator"
        )
    ]


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
        db.execute(
            "INSERT OR REPLACE INTO label_state (trajectory_id, annotator, mode_id, label_id)"
            " SELECT trajectory_id, annotator, mode_id, id FROM labels WHERE id > ? ORDER BY id",
            [start],
        )


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
