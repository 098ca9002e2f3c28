"""Synthetic databases: many step-less trajectories, bare labels and reviews written at once.

The benchmarks measure reports over up to a million trajectories (42 million labels); building
a Trajectory or a Label object per row would dominate generating them, so these write plain
tuples with one executemany each, and a verdict on every mode of a trajectory reaches SQLite as
one row that SQL expands into a label per mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import chain

import numpy as np
from sqlite_utils import Database

from annotator.models import SCHEMA_VERSION
from annotator.store import verdict_summary
from annotator.store.db import write
from annotator.store.labels import note_activity


def insert_label_matrices(
    db: Database,
    trajectory_ids: Sequence[str],
    mode_ids: Sequence[str],
    matrices: Iterable[tuple[str, str, np.ndarray]],
    *,
    taxonomy_hash: str | None = None,
    block: int = 50_000,
) -> None:
    """Append a verdict on every (trajectory, mode) for each (annotator, provenance, onsets) of
    ``matrices``; ``onsets`` (n, K) holds -1 for "absent" and the onset step of a "present". The
    newest label of each cell becomes its current one.

    A trajectory's K onsets go to a temporary table as one row (an executemany of n rows, not
    n × K) and one INSERT ... SELECT joined with the modes writes its labels. The secondary
    indexes of ``labels`` and ``label_state`` are dropped for the load and built again after it,
    and ``label_state`` is filled once, in its key order: sorting once is far cheaper than
    inserting 42 million rows into four indexes one by one. The triggers that keep
    ``verdict_summary`` current are dropped for the load too, and the summary folded once after
    it, as the sources' last activity is noted. ``matrices`` may be a generator, so only one
    source's matrix need exist at a time.
    """
    k = len(mode_ids)
    cols = ", ".join(f"o{j}" for j in range(k))
    pick = "CASE m.idx " + " ".join(f"WHEN {j} THEN g.o{j}" for j in range(k)) + " END"
    insert = f"INSERT INTO label_matrix VALUES (?, {', '.join('?' for _ in range(k))})"
    stamp = datetime.now().astimezone().isoformat()
    with write(db):
        indexes = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
                             " AND tbl_name IN ('labels', 'label_state')").fetchall()
        for name, _ in indexes:
            db.execute(f"DROP INDEX {name}")
        triggers = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                              " AND tbl_name IN ('labels', 'label_state')").fetchall()
        for name, _ in triggers:
            db.execute(f"DROP TRIGGER {name}")
        first = db.execute("SELECT coalesce(max(id), 0) FROM labels").fetchone()[0]
        db.execute("CREATE TEMP TABLE label_matrix_modes (idx INTEGER PRIMARY KEY, mode_id TEXT)")
        db.conn.executemany("INSERT INTO label_matrix_modes VALUES (?, ?)", list(enumerate(mode_ids)))
    for annotator, provenance, onsets in matrices:
        with write(db):
            db.execute(f"CREATE TEMP TABLE label_matrix (tid TEXT, {cols})")
            for start in range(0, len(trajectory_ids), block):
                part = np.asarray(onsets[start:start + block], dtype=np.int64).tolist()
                db.conn.executemany(insert, ([t, *o] for t, o in zip(trajectory_ids[start:start + block], part,
                                                                     strict=True)))
            db.execute(
                "INSERT INTO labels (schema_version, trajectory_id, mode_id, annotator, verdict, onset_step,"
                " provenance, taxonomy_hash, created_at) SELECT ?, tid, mode_id, ?, CASE WHEN v >= 0 THEN 'present'"
                f" ELSE 'absent' END, nullif(v, -1), ?, ?, ? FROM (SELECT g.tid, m.mode_id, {pick} AS v"
                " FROM label_matrix g CROSS JOIN label_matrix_modes m)",
                [SCHEMA_VERSION, annotator, provenance, taxonomy_hash, stamp],
            )
            db.execute("DROP TABLE label_matrix")
    with write(db):
        db.execute("DROP TABLE label_matrix_modes")
        for _, sql in (i for i in indexes if i[0].startswith("idx_labels_")):
            db.execute(sql)
        # In key order, read off idx_labels_key (trajectory, annotator, mode, id): no sort.
        db.execute(
            "INSERT OR REPLACE INTO label_state (trajectory_id, annotator, mode_id, label_id) SELECT trajectory_id,"
            " annotator, mode_id, id FROM labels WHERE id > ? ORDER BY trajectory_id, annotator, mode_id, id",
            [first],
        )
        for _, sql in (i for i in indexes if not i[0].startswith("idx_labels_")):
            db.execute(sql)
        for _, sql in triggers:
            db.execute(sql)
        verdict_summary.rebuild(db)
        note_activity(db, first)


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


def insert_step_rows(db: Database, traj_id: str, rows: Iterable[tuple]) -> int:
    """Append many steps to a trajectory row (generated data): tuples of (index, agent, role, kind,
    content). No full-text index entries are made; returns how many steps were written."""
    n = 0

    def counted():
        nonlocal n
        for idx, agent, role, kind, content in rows:
            n += 1
            yield traj_id, idx, f"{traj_id}:{idx}", agent, role, kind, content

    with write(db):
        db.conn.executemany(
            "INSERT INTO steps (trajectory_id, idx, id, agent, role, kind, content) VALUES (?, ?, ?, ?, ?, ?, ?)",
            counted(),
        )
        db.execute("UPDATE trajectories SET n_steps = ? WHERE id = ?", [n, traj_id])
    return n
