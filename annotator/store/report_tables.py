"""The tables reports and exports are computed from: trajectories, verdicts per source, attributions.

A report over a million trajectories touches tens of millions of (trajectory, annotator, mode)
cells. Reading those as one Python tuple per cell costs seconds and gigabytes, so the queries
here let SQLite fold a trajectory's verdicts into one row (counts, and the few verdicts that
are not "absent" as a string of integer codes that numpy parses in one call) and read the rows
a block at a time into compact numpy arrays: memory holds arrays of a few bytes per trajectory,
never a Python object per row or cell (an export's lines are ``store.export_lines``). Writing
such databases for benchmarks is ``store.synthetic``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import orjson
from sqlite_utils import Database

from annotator.errors import ReportError
from annotator.label_sources import SourceFacts, SourceName
from annotator.store import verdict_summary
from annotator.store.db import SINGLE_PASS_CACHE_KIB, open_db_to_read
from annotator.store.names import annotator_names
from annotator.store.trajectories import _where
from annotator.views import TrajectoryFilter


def _mode_index(mode_ids: Sequence[str]) -> tuple[str, list]:
    """A CASE expression giving a mode id's position in ``mode_ids`` (NULL if not there)."""
    if not mode_ids:
        raise ReportError("the codebook has no modes")
    return "CASE s.mode_id " + " ".join("WHEN ? THEN ?" for _ in mode_ids) + " END", [
        v for i, m in enumerate(mode_ids) for v in (m, i)
    ]


#: Rows fetched from a cursor at a time: a block's Python objects are all that exist at once.
BLOCK = 65_536
#: The columns trajectories are grouped by; a missing or empty value is the level "-".
GROUP_COLUMNS = ("system", "model", "benchmark")


@dataclass
class TrajectoryColumns:
    """The per-trajectory columns of the trajectories a filter selects, sorted by id."""

    ids: np.ndarray  # str
    titles: np.ndarray  # object: the titles as stored
    codes: dict[str, np.ndarray]  # per GROUP_COLUMNS: int32 index into ``levels``
    levels: dict[str, list[str]]  # per GROUP_COLUMNS: the distinct values, sorted
    outcome: np.ndarray  # int8: 1 failure, 0 success, -1 anything else
    n_steps: np.ndarray  # int64
    tasks: np.ndarray  # int64: the (benchmark, task) group, -1 where the task is unknown
    #: Per reviewer asked for, the review status of each trajectory as a REVIEW code.
    reviews: dict[str, np.ndarray]


#: Review statuses as the codes of ``TrajectoryColumns.reviews`` (any other status is OTHER).
NO_REVIEW, NOT_STARTED, IN_PROGRESS, DONE, OTHER = 0, 1, 2, 3, 4


def trajectory_columns(db: Database, flt: TrajectoryFilter | None = None,
                       reviewers: Sequence[str] = ()) -> TrajectoryColumns:
    """The columns of the trajectories the filter selects, read a block at a time.

    The task group numbers the distinct (benchmark, task) pairs, so that runs of the same task
    by several systems or models can be clustered without reading the task texts; it is -1
    where the task is unknown. Each grouping column comes as codes into its sorted levels.
    Each reviewer's review status comes as a small integer beside each trajectory (a look-up
    of its review by key as the row is read), not as a million (id, status) rows to match.
    SQLite folds each block into one row (:func:`_folded_blocks`): the texts as JSON arrays,
    the integers as comma-separated text, so no Python tuple is made per trajectory.
    """
    where, params = _where(flt or TrajectoryFilter())
    groups = "".join(f", coalesce(nullif(t.{c}, ''), '-') AS g{i}" for i, c in enumerate(GROUP_COLUMNS))
    statuses = "".join(f", CASE WHEN r{i}.status IS NULL THEN {NO_REVIEW} WHEN r{i}.status = 'done' THEN {DONE}"
                       f" WHEN r{i}.status = 'in_progress' THEN {IN_PROGRESS} WHEN r{i}.status = 'not_started'"
                       f" THEN {NOT_STARTED} ELSE {OTHER} END AS r{i}" for i in range(len(reviewers)))
    joins = "".join(f" LEFT JOIN review_state r{i} ON r{i}.trajectory_id = t.id AND r{i}.annotator = ?"
                    for i in range(len(reviewers)))
    rows = (
        f"SELECT t.id AS k, t.title AS title{groups}, CASE t.outcome WHEN 'failure' THEN 1 WHEN 'success' THEN 0"
        f" ELSE -1 END AS outcome, coalesce(CAST(t.n_steps AS INTEGER), 0) AS n_steps{statuses}"
        f" FROM trajectories t{joins} WHERE " + " AND ".join(where)
    )
    numbers = ["outcome", "n_steps", *(f"r{i}" for i in range(len(reviewers)))]
    folded = ", ".join(["json_group_array(k)", "json_group_array(title)",
                        *(f"json_group_array(g{i})" for i in range(len(GROUP_COLUMNS))),
                        *(f"group_concat({c})" for c in numbers)])
    ids, titles, number_parts = [], [], []
    found = [_Codes() for _ in GROUP_COLUMNS]
    codes: list[list[np.ndarray]] = [[] for _ in GROUP_COLUMNS]
    for n, block in _folded_blocks(db, folded, rows, "t.id", [*reviewers, *params]):
        ids.append(np.asarray(orjson.loads(block[0]), dtype=str))
        titles.append(_objects(orjson.loads(block[1])))
        for i, seen in enumerate(found):
            codes[i].append(np.fromiter(map(seen.__getitem__, orjson.loads(block[2 + i])), dtype=np.int32, count=n))
        number_parts.append(np.stack([_integers(text, n) for text in block[2 + len(GROUP_COLUMNS):]]))
    number = np.concatenate(number_parts, axis=1) if number_parts else np.zeros((len(numbers), 0), dtype=np.int64)
    all_ids = np.concatenate(ids) if ids else np.zeros(0, dtype=str)
    all_titles = np.concatenate(titles) if titles else _objects([])
    levels, sorted_codes = {}, {}
    for i, column in enumerate(GROUP_COLUMNS):
        names = sorted(found[i])
        rank = np.empty(len(names), dtype=np.int32)
        rank[[found[i][v] for v in names]] = np.arange(len(names), dtype=np.int32)
        levels[column] = names
        sorted_codes[column] = rank[np.concatenate(codes[i])] if codes[i] else np.zeros(0, dtype=np.int32)
    order = _id_order(all_ids)
    if order is not None:
        all_ids, all_titles, number = all_ids[order], all_titles[order], number[:, order]
        sorted_codes = {c: v[order] for c, v in sorted_codes.items()}
    return TrajectoryColumns(
        ids=all_ids, titles=all_titles, codes=sorted_codes, levels=levels,
        outcome=number[0].astype(np.int8), n_steps=number[1], tasks=_task_groups(db, where, params, all_ids),
        reviews={name: number[2 + i].astype(np.int8) for i, name in enumerate(reviewers)},
    )


def _folded_blocks(db: Database | sqlite3.Connection, folded: str, rows: str, key: str,
                   params: Sequence, group: str = "") -> Iterator[tuple[int, tuple]]:
    """The rows of the query ``rows`` (a SELECT whose first column is ``key AS k``, ending in
    its WHERE conditions; ``group`` its GROUP BY, if any) in ``key`` order, :data:`BLOCK` at a
    time, each block folded by SQLite into one row of the aggregates ``folded``: (rows in the
    block, that row).

    Reading a million rows one Python tuple at a time cost more than SQLite's work for them
    (the objects, and the garbage collector walking them); a block folded into a few texts
    (JSON arrays, comma-separated integers) is a few objects that orjson and numpy parse in
    one call each. The blocks follow each other by key (``key > last``), so each is one range
    of the key's index. SQLite does not promise the order of an aggregate's values, but it
    folds each row into every aggregate of the block at once: the columns stay aligned, and
    the caller puts them in key order if they are not (:func:`_id_order`).
    """
    last = None
    while True:
        bound = "" if last is None else f" AND {key} > ?"
        n, last, *folds = db.execute(
            f"SELECT count(*), max(k), {folded} FROM ({rows}{bound}{group} ORDER BY {key} LIMIT {BLOCK})",
            [*params, *(() if last is None else (last,))],
        ).fetchone()
        if n:
            yield n, tuple(folds)
        if n < BLOCK:
            return


def _integers(text: str | None, n: int) -> np.ndarray:
    """A block's comma-separated integers (``group_concat``) as int64, checked to be ``n``."""
    values = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)
    if len(values) != n:
        raise ReportError(f"read {len(values)} integers for {n} rows")  # a NULL group_concat skipped
    return values


def _id_order(ids: np.ndarray) -> np.ndarray | None:
    """The permutation that sorts ``ids``, or None if they are sorted (as SQLite folds them)."""
    if len(ids) < 2 or bool((ids[1:] > ids[:-1]).all()):
        return None
    return np.argsort(ids, kind="stable")


class _Codes(dict):
    """Each value's code in the order values are first seen; a new value gets the next code when
    it is looked up, so a column of a block is coded by one ``map`` (no sort of its strings)."""

    def __missing__(self, value: str) -> int:
        code = self[value] = len(self)
        return code


def _task_groups(db: Database, where: list[str], params: list, ids: np.ndarray) -> np.ndarray:
    """Per trajectory of ``ids`` (sorted), its (benchmark, task) group, numbered by SQLite over the
    selected trajectories with a task (only those are sorted by their task texts), or -1."""
    sql = ("SELECT t.id, dense_rank() OVER (ORDER BY t.benchmark, t.task) FROM trajectories t WHERE "
           + " AND ".join([*where, "t.task IS NOT NULL"]))
    tasks = np.full(len(ids), -1, dtype=np.int64)
    cursor = db.execute(sql, params)
    while rows := cursor.fetchmany(BLOCK):
        tids, group = zip(*rows, strict=True)
        tasks[np.searchsorted(ids, np.asarray(tids, dtype=str))] = group
    return tasks


def _objects(values) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


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


@dataclass
class Verdicts:
    """One annotator's current verdicts on the codebook's modes, per trajectory that has any.

    ``cells`` lists the verdicts that are not "absent" (the few; absent ones are only counted):
    (position in ``tids``, 2 × mode index + 1 if present else 0, onset step or -1).
    """

    tids: np.ndarray  # str, sorted
    total: np.ndarray  # int16: verdicts on the codebook's modes
    absent: np.ndarray  # int16: how many of them are "absent"
    cells: np.ndarray  # int64 (m, 3)
    #: Current labels on modes the codebook does not have (on every trajectory of the range).
    outside_codebook: int = 0

    @classmethod
    def join(cls, parts: Sequence[Verdicts]) -> Verdicts:
        """Parts over consecutive ranges of trajectory ids, as one."""
        if not parts:
            return cls(np.zeros(0, dtype=str), np.zeros(0, np.int16), np.zeros(0, np.int16), np.zeros((0, 3), np.int64))
        offsets = np.cumsum([0] + [len(p.tids) for p in parts[:-1]])
        cells = np.concatenate([p.cells + [o, 0, 0] for p, o in zip(parts, offsets, strict=True)])
        return cls(np.concatenate([p.tids for p in parts]), np.concatenate([p.total for p in parts]),
                   np.concatenate([p.absent for p in parts]), cells, sum(p.outside_codebook for p in parts))

    def in_order(self) -> Verdicts:
        """These verdicts with ``tids`` sorted (themselves if they are, as SQLite folds them)."""
        order = _id_order(self.tids)
        if order is None:
            return self
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        return Verdicts(self.tids[order], self.total[order], self.absent[order],
                        np.column_stack([position[self.cells[:, 0]], self.cells[:, 1:]]), self.outside_codebook)


def verdict_rows(
    db: Database | sqlite3.Connection, annotator: str, mode_ids: Sequence[str], after: str | None = None,
    before: str | None = None,
) -> Verdicts:
    """The annotator's verdicts on the trajectories with ids in [after, before), folded by SQLite.

    The fold is read from ``verdict_summary``, made as the labels were written, when it is
    current for the annotator and its rows in the range hold labels on the codebook's modes only
    (its mode codes are mapped to the codebook's order); otherwise SQLite folds the cells here.
    One row per trajectory: its verdicts on the codebook's modes, how many are "absent", and the
    others as comma-separated integer pairs ``2 * mode index + (1 if present else 0), onset step
    or -1``. Absent verdicts, the bulk of all cells, are only counted: a trajectory with a verdict
    on every mode needs nothing more, and :func:`absent_cells` names them for the few that lack
    some. Rows are read a block at a time into arrays. The labels on the codebook's modes
    without a verdict are counted too, so that the annotator's labels outside the codebook in
    the range (``outside_codebook``) are a count over an index less these, made on the same
    connection (so on the reader's thread), not a second pass over the annotator's cells.
    """
    summary = verdict_summary.codebook_codes(db, annotator, mode_ids)
    if summary is not None:
        read = _summary_rows(db, annotator, after, before, *summary)
        if read is not None:
            return read
    case, params = _mode_index(mode_ids)
    marks = ", ".join("?" for _ in mode_ids)
    sql = (
        "SELECT s.trajectory_id AS k, count(l.verdict) AS total, coalesce(sum(l.verdict = 'absent'), 0) AS absent,"
        f" group_concat(CASE WHEN l.verdict != 'absent' THEN (({case}) * 2 + (l.verdict = 'present'))"
        " || ',' || coalesce(l.onset_step, -1) END) AS cells, count(*) AS labelled"
        " FROM label_state s JOIN labels l ON l.id = s.label_id"
        f" WHERE s.annotator = ? AND s.mode_id IN ({marks})"
    )
    within, bounds = _id_range("s.trajectory_id", after, before)
    sql += within
    args = [*params, annotator, *mode_ids, *bounds]
    labels = db.execute(f"SELECT count(*) FROM label_state s WHERE s.annotator = ?{within}",
                        [annotator, *bounds]).fetchone()[0]
    folded = "json_group_array(k), group_concat(total), group_concat(absent), group_concat(cells), sum(labelled)"
    parts, in_codebook = [], 0
    for n, (tids, total, n_absent, cells, labelled) in _folded_blocks(
            db, folded, sql, "s.trajectory_id", args, " GROUP BY s.trajectory_id"):
        parts.append(_verdicts(orjson.loads(tids), _integers(total, n), _integers(n_absent, n), cells))
        in_codebook += labelled
    joined = Verdicts.join(parts).in_order()
    joined.outside_codebook = labels - in_codebook
    return joined


def _id_range(column: str, after: str | None, before: str | None) -> tuple[str, list]:
    """The condition (``AND …``) that ``column`` lies in [after, before), an end None being open,
    and its parameters."""
    sql, bounds = "", []
    for bound, op in ((after, ">="), (before, "<")):
        if bound is not None:
            sql += f" AND {column} {op} ?"
            bounds.append(bound)
    return sql, bounds


def _verdicts(tids: list[str], total: np.ndarray, n_absent: np.ndarray, cells: str | None,
              to_codebook: np.ndarray | None = None) -> Verdicts:
    """A block of folded rows as arrays (``cells``: their non-absent verdicts' pairs, joined
    by commas); ``to_codebook`` maps the summary's mode codes to the codebook's indexes."""
    total, n_absent = total.astype(np.int16), n_absent.astype(np.int16)
    pairs = np.fromstring(cells, dtype=np.int64, sep=",").reshape(-1, 2) if cells else np.zeros((0, 2), np.int64)
    if to_codebook is not None:
        pairs[:, 0] = to_codebook[pairs[:, 0] >> 1] * 2 + (pairs[:, 0] & 1)
    verdicts = total > 0  # a trajectory whose labels all lack a verdict has no row
    row = (np.cumsum(verdicts) - 1)[np.repeat(np.arange(len(tids)), total - n_absent)]
    return Verdicts(np.asarray(tids, dtype=str)[verdicts], total[verdicts], n_absent[verdicts],
                    np.column_stack([row, pairs]))


def _summary_rows(db: Database | sqlite3.Connection, annotator: str, after: str | None, before: str | None,
                  order: list[int], bits: int) -> Verdicts | None:
    """The annotator's rows of ``verdict_summary`` in [after, before), or None if one of them has a
    label on a mode outside the codebook (its mode bits inside the codebook number fewer than its labels)."""
    within, bounds = _id_range("trajectory_id", after, before)
    sql = ("SELECT trajectory_id AS k, verdicts, absent, cells, labels, modes FROM verdict_summary"
           f" WHERE annotator = ?{within}")
    args = [annotator, *bounds]
    folded = ("json_group_array(k), group_concat(verdicts), group_concat(absent), group_concat(nullif(cells, '')),"
              " group_concat(labels), group_concat(modes)")
    to_codebook, parts = np.asarray(order, dtype=np.int64), []
    for n, (tids, total, n_absent, cells, labelled, modes) in _folded_blocks(db, folded, sql, "trajectory_id", args):
        if (np.bitwise_count(_integers(modes, n) & bits) != _integers(labelled, n)).any():
            return None
        parts.append(_verdicts(orjson.loads(tids), _integers(total, n), _integers(n_absent, n), cells, to_codebook))
    return Verdicts.join(parts).in_order()


class VerdictReads:
    """Verdict reads under way on their own threads: :meth:`result` waits for their rows;
    :meth:`cancel` (in a ``finally``) stops those still running, so that a caller that fails
    or is interrupted meanwhile does not wait at exit for seconds of SQLite work nobody needs."""

    def __init__(self, annotators: Sequence[str], jobs: list[tuple[str, str | None, str | None]],
                 run: Callable[[tuple[str, str | None, str | None], list], Verdicts] | None,
                 done: dict[str, Verdicts] | None = None) -> None:
        self._annotators, self._jobs, self._done = annotators, jobs, done
        self._connections: list[sqlite3.Connection] = []
        self._reading: list = []
        if run is not None:
            pool = ThreadPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 2))
            self._reading = [pool.submit(run, job, self._connections) for job in jobs]
            pool.shutdown(wait=False)

    def result(self) -> dict[str, Verdicts]:
        if self._done is None:
            results = [r.result() for r in self._reading]
            self._done = {a: Verdicts.join([r for (b, _, _), r in zip(self._jobs, results, strict=True) if b == a])
                          for a in self._annotators}
        return self._done

    def cancel(self) -> None:
        for reading in self._reading:
            reading.cancel()
        for conn in list(self._connections):
            try:
                conn.interrupt()
            except sqlite3.ProgrammingError:  # closed meanwhile: its read is over
                pass


def verdict_rows_many(
    db: Database, annotators: Sequence[str], mode_ids: Sequence[str], splits: Sequence[str] = ()
) -> VerdictReads:
    """:func:`verdict_rows` of several annotators, read in parallel and started at once, so that
    the caller reads the trajectory columns meanwhile (SQLite's folding of a million
    trajectories' cells takes seconds of its own).

    The work is cut by annotator and by trajectory id (``splits`` are the boundaries) and
    spread over threads, each with its own read-only connection: SQLite does the folding
    outside the GIL, so a second core halves the wait. An in-memory database is read on the
    caller's connection instead, before this returns.
    """
    bounds = list(zip([None, *splits], [*splits, None], strict=True))
    jobs = [(a, lo, hi) for a in annotators for lo, hi in bounds]
    path = db.execute("PRAGMA database_list").fetchone()[2]
    if not path or len(jobs) == 1:
        rows = {a: Verdicts.join([verdict_rows(db, a, mode_ids, lo, hi) for _, lo, hi in jobs if _ == a])
                for a in annotators}
        return VerdictReads(annotators, jobs, None, rows)

    def run(job: tuple[str, str | None, str | None], connections: list) -> Verdicts:
        reader = open_db_to_read(path, SINGLE_PASS_CACHE_KIB)  # one pass over the cells reuses no page
        connections.append(reader.conn)
        try:
            return verdict_rows(reader, job[0], mode_ids, job[1], job[2])
        finally:
            connections.remove(reader.conn)
            reader.close()

    return VerdictReads(annotators, jobs, run)


def id_splits(db: Database, parts: int) -> list[str]:
    """Trajectory ids that cut the published trajectories into ``parts`` ranges of about as
    many (none under 1,000 a part: not worth a thread)."""
    n = count_trajectories(db)
    if n < 1000 * parts:
        return []
    sql = "SELECT id FROM trajectories WHERE pending IS NULL ORDER BY id LIMIT 1 OFFSET ?"
    return [db.execute(sql, [n * i // parts]).fetchone()[0] for i in range(1, parts)]


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
    return sorted(set(annotator_names(db, "label_state")) | set(annotator_names(db, "review_state")))


def trajectory_ids(db: Database) -> list[str]:
    """Every published trajectory id, sorted (an import's unseen rows are not yet trajectories)."""
    return [r[0] for r in db.execute("SELECT id FROM trajectories WHERE pending IS NULL ORDER BY id")]


def last_activity(db: Database, names: Sequence[str]) -> dict[str, str]:
    """Per annotator of ``names``, when it last wrote a label or changed a review state (ISO 8601
    text; none if neither): its row of ``label_activity`` and one search of review states'
    (annotator, time) index a name."""
    out = {}
    for name in names:
        stamps = db.execute("SELECT (SELECT written_at FROM label_activity WHERE annotator = :name),"
                            " (SELECT max(updated_at) FROM review_state WHERE annotator = :name)",
                            {"name": name}).fetchone()
        if any(stamps):
            out[name] = max(s for s in stamps if s)
    return out
