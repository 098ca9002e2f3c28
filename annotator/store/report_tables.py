"""The tables reports and exports are computed from: trajectories, verdicts per source, attributions.

A report over 100,000 trajectories touches millions of (trajectory, annotator, mode) cells.
Reading those as one Python tuple per cell costs seconds and gigabytes, so the queries here
let SQLite fold a trajectory's verdicts into one row: counts, and the few verdicts that are
not "absent" as a string of integer codes that numpy parses in one call (an export's lines are
``store.export_lines``). Writing such databases for benchmarks is ``store.synthetic``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from sqlite_utils import Database

from annotator.errors import ReportError
from annotator.label_sources import SourceFacts, SourceName
from annotator.store.trajectories import _where
from annotator.views import TrajectoryFilter


def _mode_index(mode_ids: Sequence[str]) -> tuple[str, list]:
    """A CASE expression giving a mode id's position in ``mode_ids`` (NULL if not there)."""
    if not mode_ids:
        raise ReportError("the codebook has no modes")
    return "CASE s.mode_id " + " ".join("WHEN ? THEN ?" for _ in mode_ids) + " END", [
        v for i, m in enumerate(mode_ids) for v in (m, i)
    ]


def trajectory_rows(db: Database, flt: TrajectoryFilter | None = None) -> list[tuple]:
    """(id, system, model, benchmark, outcome, n_steps, title, task group) of the trajectories the filter selects.

    The task group numbers the distinct (benchmark, task) pairs, so that runs of the same task
    by several systems or models can be clustered without reading the task texts; it is None
    where the task is unknown.
    """
    where, params = _where(flt or TrajectoryFilter())
    sql = (
        "SELECT t.id, t.system, t.model, t.benchmark, t.outcome, t.n_steps, t.title, CASE WHEN t.task IS NULL"
        " THEN NULL ELSE dense_rank() OVER (ORDER BY t.benchmark, t.task) END FROM trajectories t"
    )
    if where:
        sql += " WHERE " + " AND ".join(where)
    return db.execute(sql + " ORDER BY t.id", params).fetchall()


def attribution_rows(db: Database) -> list[tuple[str, str, int | None, str | None]]:
    """(trajectory id, attributed by, step, agent) of every decisive-error attribution."""
    sql = "SELECT trajectory_id, annotator, step, agent FROM attributions ORDER BY trajectory_id"
    return db.execute(sql).fetchall()


def step_agents(db: Database, cells: Sequence[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
    """The agent of each (trajectory id, step index) asked for that exists."""
    out: dict[tuple[str, int], str | None] = {}
    for start in range(0, len(cells), 400):
        chunk = cells[start:start + 400]
        values = ", ".join("(?, ?)" for _ in chunk)
        rows = db.execute(
            f"SELECT trajectory_id, idx, agent FROM steps WHERE (trajectory_id, idx) IN (VALUES {values})",
            [v for cell in chunk for v in cell],
        ).fetchall()
        out.update({(t, i): agent for t, i, agent in rows})
    return out


def count_trajectories(db: Database) -> int:
    return db.execute("SELECT count(*) FROM trajectories WHERE pending IS NULL").fetchone()[0]


def verdict_rows(
    db: Database | sqlite3.Connection, annotator: str, mode_ids: Sequence[str], after: str | None = None,
    before: str | None = None,
) -> list[tuple[str, int, int, str | None]]:
    """One row per trajectory the annotator has current verdicts for (ids in [after, before)), folded by SQLite.

    (trajectory id, verdicts on the codebook's modes, how many of them are "absent", codes)
    where codes lists the other verdicts as comma-separated integer pairs
    ``2 * mode index + (1 if present else 0), onset step or -1``. Absent verdicts, the bulk of
    all cells, are only counted: a trajectory with a verdict on every mode needs nothing more,
    and :func:`absent_cells` names them for the few that lack some.
    """
    case, params = _mode_index(mode_ids)
    marks = ", ".join("?" for _ in mode_ids)
    sql = (
        "SELECT s.trajectory_id, count(*), sum(l.verdict = 'absent'),"
        f" group_concat(CASE WHEN l.verdict != 'absent' THEN (({case}) * 2 + (l.verdict = 'present'))"
        " || ',' || coalesce(l.onset_step, -1) END)"
        " FROM label_state s JOIN labels l ON l.id = s.label_id"
        f" WHERE s.annotator = ? AND l.verdict IS NOT NULL AND s.mode_id IN ({marks})"
    )
    args = [*params, annotator, *mode_ids]
    if after is not None:
        sql += " AND s.trajectory_id >= ?"
        args.append(after)
    if before is not None:
        sql += " AND s.trajectory_id < ?"
        args.append(before)
    return db.execute(sql + " GROUP BY s.trajectory_id", args).fetchall()


def verdict_rows_many(
    db: Database, annotators: Sequence[str], mode_ids: Sequence[str], splits: Sequence[str] = ()
) -> dict[str, list[tuple[str, int, int, str | None]]]:
    """:func:`verdict_rows` of several annotators, read in parallel.

    The work is cut by annotator and by trajectory id (``splits`` are the boundaries) and
    spread over threads, each with its own read-only connection: SQLite does the folding
    outside the GIL, so a second core halves the wait. An in-memory database is read on the
    caller's connection instead.
    """
    bounds = list(zip([None, *splits], [*splits, None], strict=True))
    jobs = [(a, lo, hi) for a in annotators for lo, hi in bounds]
    path = db.execute("PRAGMA database_list").fetchone()[2]
    if not path or len(jobs) == 1:
        return {a: [r for _, lo, hi in jobs if _ == a for r in verdict_rows(db, a, mode_ids, lo, hi)]
                for a in annotators}

    def run(job: tuple[str, str | None, str | None]) -> list:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            return verdict_rows(conn, job[0], mode_ids, job[1], job[2])
        finally:
            conn.close()

    with ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 2)) as pool:
        results = list(pool.map(run, jobs))
    out: dict[str, list] = {a: [] for a in annotators}
    for (a, _, _), rows in zip(jobs, results, strict=True):
        out[a].extend(rows)
    return out


def absent_cells(db: Database, annotator: str, trajectory_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(trajectory id, mode id) of the annotator's current "absent" verdicts on these trajectories."""
    out: list[tuple[str, str]] = []
    for start in range(0, len(trajectory_ids), 500):
        chunk = list(trajectory_ids[start : start + 500])
        out += db.execute(
            "SELECT s.trajectory_id, s.mode_id FROM label_state s JOIN labels l ON l.id = s.label_id"
            f" WHERE s.annotator = ? AND l.verdict = 'absent' AND s.trajectory_id IN ({', '.join('?' for _ in chunk)})",
            [annotator, *chunk],
        ).fetchall()
    return out


def labels_outside(db: Database, annotator: str, mode_ids: Sequence[str]) -> int:
    """How many current labels of the annotator name a mode the codebook does not have."""
    marks = ", ".join("?" for _ in mode_ids)
    return db.execute(
        f"SELECT count(*) FROM label_state WHERE annotator = ? AND mode_id NOT IN ({marks})",
        [annotator, *mode_ids],
    ).fetchone()[0]


def source_facts(db: Database, source: SourceName) -> SourceFacts:
    """What the store knows about a stored source name, in one query: whether it has review
    states and labels, one current label's provenance and importer tag (an imported set is
    written by one importer, so one label says where all came from), and its run if it names one."""
    row = db.execute(
        "SELECT EXISTS(SELECT 1 FROM review_state WHERE annotator = :name), o.provenance, o.origin,"
        " r.kind, r.model, r.status"
        " FROM (SELECT 1) LEFT JOIN (SELECT l.provenance, json_extract(l.extra, '$.source') AS origin"
        "  FROM label_state s JOIN labels l ON l.id = s.label_id WHERE s.annotator = :name LIMIT 1) o"
        " LEFT JOIN label_runs r ON r.id = :run",
        {"name": source.name, "run": source.run_id},
    ).fetchone()
    reviewed, provenance, origin, run_kind, model, status = row
    detail = f"{run_kind} run, {model or '-'}, status {status}" if run_kind else ""
    return SourceFacts(bool(reviewed), provenance is not None, provenance, origin, run_kind, detail)


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


def source_names(db: Database) -> list[str]:
    """Every name labels or review states stand under (people, runs, imported sets), sorted."""
    return [r[0] for r in db.execute(
        "SELECT annotator FROM label_state UNION SELECT annotator FROM review_state ORDER BY 1")]


def trajectory_ids(db: Database) -> list[str]:
    """Every trajectory id, sorted."""
    return [r[0] for r in db.execute("SELECT id FROM trajectories ORDER BY id")]


def last_activity(db: Database) -> dict[str, str]:
    """Per annotator, when it last wrote a label or changed a review state (ISO 8601 text)."""
    return dict(db.execute(
        "SELECT annotator, max(t) FROM (SELECT annotator, max(created_at) AS t FROM labels GROUP BY annotator"
        " UNION ALL SELECT annotator, max(updated_at) FROM review_state GROUP BY annotator) GROUP BY annotator"
    ).fetchall())
