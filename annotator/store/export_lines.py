"""The lines of a label export, written by SQLite itself.

An export of half a million labels is bound by the cost of a row: reading fifteen columns
into Python objects, building a dict and serialising it costs more than SQLite spends finding
the row, and so does handing SQLite's rows to Python one by one. So one query over all the
sources selects their current verdicts on the filter's trajectories and hands over one value
per trajectory: its JSONL lines, ``json_object`` writing the label fields of each line, the
trajectory's fields rendered once and put at the end of each of its lines (``replace`` of the
closing ``}`` of every line: a raw newline only ever separates lines, since JSON text escapes
it). Python only joins and writes them.

The keys are ``report.export.LONG_COLUMNS`` (the source before the trajectory id, as exports
have always been written), the values as the store holds them: JSON columns embedded as JSON,
``grounded`` a boolean, a ``confidence`` with all the digits that give back the same number
(SQLite prints 15 significant digits, which is not always enough; such a value is printed
with 17). Lines come in trajectory order, a trajectory's sources in the order they are named,
each source's modes in order. SQLite 3.44 and later are told so (``group_concat(… ORDER BY
…)``); before, the order of ``group_concat`` is not documented, and the query's loops are nested
in that order instead (trajectories by the primary key's index, which also serves the ``ORDER
BY`` on their id, then sources, then each source's labels by the index that leads with it) so
that it receives them so, with no sort between the loops and the aggregate (the tests read the
plan).

The query is SQLite's work alone, done outside the GIL, so a database in a file is read by two
connections of its own at once: the trajectories cut by id into runs of ``CHUNK``, each run one
query, taken in turn by two threads and written in id order, at most two runs' lines held at a
time. Each run reads the state of the file when it starts, as the report's parallel reads do.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from sqlite_utils import Database

from annotator.models import LABEL_EXPORT_FORMAT, SCHEMA_VERSION
from annotator.store.db import open_db_to_read
from annotator.store.trajectories import _where
from annotator.views import TrajectoryFilter

#: Trajectories a cursor hands over at a time.
FETCH = 64

#: The stored fields of a label as an export row carries them, in the order it writes them.
LABEL_FIELDS = ("trajectory_id", "mode_id", "verdict", "onset_step", "evidence_steps", "quote", "note", "rationale",
                "confidence", "provenance", "run_id", "grounded", "taxonomy_hash", "extra", "created_at")
#: The fields of its trajectory every row repeats (what a report groups by), after the label's.
TRAJECTORY_FIELDS = ("system", "model", "benchmark", "outcome", "n_steps", "title")

#: How a field is written where the stored column is not its JSON value as it is.
_VALUES = {
    "trajectory_id": "s.trajectory_id",
    "mode_id": "s.mode_id",
    # The empty forms, most labels' values, are not parsed again: json('[]') is a constant.
    "evidence_steps": "CASE l.evidence_steps WHEN '[]' THEN json('[]') ELSE json(l.evidence_steps) END",
    "extra": "CASE l.extra WHEN '{}' THEN json('{}') ELSE json(l.extra) END",
    "grounded": "CASE l.grounded WHEN 0 THEN json('false') WHEN 1 THEN json('true') END",
    "confidence": "CASE WHEN l.confidence IS NULL THEN NULL"
                  " WHEN CAST(printf('%!.15g', l.confidence) AS REAL) = l.confidence THEN l.confidence"
                  " ELSE json(printf('%!.17g', l.confidence)) END",
    "system": "nullif(t.system, '')",
    "model": "nullif(t.model, '')",
    "benchmark": "nullif(t.benchmark, '')",
    "outcome": "CASE WHEN t.outcome IN ('failure', 'success') THEN t.outcome ELSE 'unknown' END",
    "n_steps": "t.n_steps",
    "title": "t.title",
}
_LABEL = "json_object('format', '{}', 'schema_version', {}, 'source', s.annotator, {})".format(
    LABEL_EXPORT_FORMAT, int(SCHEMA_VERSION), ", ".join(f"'{f}', {_VALUES.get(f, 'l.' + f)}" for f in LABEL_FIELDS)
)
#: The trajectory's fields as the end of a line: ``,"system":…,"title":…}``.
_TRAJECTORY = "',' || substr(json_object({}), 2)".format(
    ", ".join(f"'{f}', {_VALUES[f]}" for f in TRAJECTORY_FIELDS)
)
#: From SQLite 3.44 an aggregate takes an ORDER BY; before, the order its rows arrive in is kept.
ORDERED = sqlite3.sqlite_version_info >= (3, 44)


def _lines(ordered: bool) -> str:
    """A trajectory's lines, its sources in the order named (``src.k``), then its modes."""
    order = " ORDER BY src.k, s.mode_id" if ordered else ""
    return (f"CAST(replace(group_concat({_LABEL}, char(10){order}) || char(10), '}}' || char(10),"
            f" {_TRAJECTORY} || char(10)) AS BLOB)")


class Finished(NamedTuple):
    """Which trajectories of a source an export holds: ``reviewed`` those it marked done,
    ``all_of`` those with a verdict of it on each of these modes; neither, all it labelled."""

    source: str
    reviewed: bool = False
    all_of: Sequence[str] | None = None


def _cells(mode_ids: Sequence[str], flt: TrajectoryFilter, annotator: str | None = None) -> tuple[str, list]:
    """FROM and WHERE of the current verdicts on ``mode_ids`` of the filter's trajectories: the
    annotator's or, without one, those of every source of the query's ``src``, looped inside the
    trajectories (``CROSS JOIN`` keeps the loops in the order the export writes its lines)."""
    where, params = _where(flt, column_indexes=annotator is not None)
    marks = ", ".join("?" for _ in mode_ids)
    if annotator is None:
        joins, who, mode = "CROSS JOIN src CROSS JOIN", "src.name", "+s.mode_id"  # +: no index loop over the modes
    else:
        joins, who, mode = "JOIN", "?", "s.mode_id"
        params = [annotator, *params]
    sql = (
        f" FROM trajectories t {joins} label_state s ON s.annotator = {who} AND s.trajectory_id = t.id"
        " JOIN labels l ON l.id = s.label_id"
        f" WHERE {' AND '.join(where)} AND l.verdict IS NOT NULL AND {mode} IN ({marks})"
    )
    return sql, [*params, *mode_ids]


def modes_with_verdicts(db: Database, annotator: str, mode_ids: Sequence[str], flt: TrajectoryFilter) -> list[str]:
    """Those of ``mode_ids`` the annotator gave a verdict on somewhere among the filter's trajectories."""
    sql, params = _cells(mode_ids, flt, annotator)
    return sorted(r[0] for r in db.execute("SELECT DISTINCT s.mode_id" + sql, params))


def _finished(k: int, rule: Finished) -> tuple[str, list]:
    """The condition that source ``k`` of the query (``src.k``) has finished trajectory ``t``."""
    sql, params = "1", []
    if rule.reviewed:
        sql = ("EXISTS (SELECT 1 FROM review_state r WHERE r.trajectory_id = t.id AND r.annotator = src.name"
               " AND r.status = 'done')")
    if rule.all_of is not None:
        marks = ", ".join("?" for _ in rule.all_of)
        sql += (" AND (SELECT count(*) FROM label_state c JOIN labels cl ON cl.id = c.label_id"
                " WHERE c.annotator = src.name AND c.trajectory_id = t.id AND cl.verdict IS NOT NULL"
                f" AND c.mode_id IN ({marks})) = ?")
        params += [*rule.all_of, len(rule.all_of)]
    return f"WHEN {k} THEN {sql}", params


#: A run of trajectory ids: from the first (None: the start) up to, not including, the second
#: (None: the end).
Run = tuple[str | None, str | None]


def export_query(sources: Sequence[Finished], mode_ids: Sequence[str], flt: TrajectoryFilter,
                 ordered: bool = ORDERED, run: Run = (None, None)) -> tuple[str, list]:
    """The query :func:`export_lines` runs and its parameters; ``ordered``: ``group_concat`` is
    told the order of a trajectory's lines (SQLite 3.44 and later), rather than given them in it;
    ``run``: only the trajectories of that run of ids."""
    names = ", ".join("(?, ?)" for _ in sources)
    cases = [_finished(k, rule) for k, rule in enumerate(sources)]
    cells, params = _cells(mode_ids, flt)
    for op, bound in zip((">=", "<"), run, strict=True):
        if bound is not None:
            cells += f" AND t.id {op} ?"
            params.append(bound)
    sql = (
        f"WITH src(k, name) AS (VALUES {names})"
        f" SELECT {_lines(ordered)}{cells} AND CASE src.k {' '.join(c for c, _ in cases)} END"
        " GROUP BY t.id ORDER BY t.id"
    )
    return sql, [*(v for k, rule in enumerate(sources) for v in (k, rule.source)), *params,
                 *(p for _, ps in cases for p in ps)]


#: Trajectories (published ones, whether the filter takes them or not) in a run read by one
#: query: two runs' lines at most are held at a time.
CHUNK = 2000
#: Connections reading runs at once: SQLite's work takes a core each.
READERS = 2


def _runs(db: Database) -> list[Run]:
    """The published trajectories cut by id into runs of ``CHUNK``, in id order; one pass over
    the id's index."""
    cuts = [r[0] for r in db.execute(
        "SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM trajectories WHERE pending IS NULL)"
        " WHERE n % ? = 1 AND n > 1", [CHUNK])]
    return list(zip([None, *cuts], [*cuts, None], strict=True))


def export_lines(db: Database, sources: Sequence[Finished], mode_ids: Sequence[str], flt: TrajectoryFilter) -> Iterator[bytes]:
    """The JSONL lines (each ending in a newline) of the current verdicts of ``sources`` on
    ``mode_ids``, on the filter's trajectories each source has finished, a block of whole
    trajectories at a time, in trajectory order; a trajectory's sources in the order given,
    each source's modes in order."""
    path = db.execute("PRAGMA database_list").fetchone()[2]
    runs = _runs(db) if path else []
    if len(runs) < 2:  # a database in memory is read on its own connection
        cursor = db.execute(*export_query(sources, mode_ids, flt))
        while rows := cursor.fetchmany(FETCH):
            yield b"".join([r[0] for r in rows])
        return
    readers: list[Database] = []
    local = threading.local()

    def read(run: Run) -> bytes:
        reader = getattr(local, "db", None)
        if reader is None:
            reader = local.db = open_db_to_read(path)
            reader.execute("PRAGMA cache_size = -2000")  # SQLite's default: one pass reuses no page
            readers.append(reader)
        return b"".join([r[0] for r in reader.execute(*export_query(sources, mode_ids, flt, run=run))])

    pool = ThreadPoolExecutor(max_workers=READERS)
    later = iter(runs[READERS:])
    reading = deque(pool.submit(read, run) for run in runs[:READERS])
    try:
        while reading:
            block = reading.popleft().result()
            for run in itertools.islice(later, 1):
                reading.append(pool.submit(read, run))
            if block:
                yield block
    finally:  # also when the caller stops early: the runs under way are interrupted, not waited for
        for pending in reading:
            pending.cancel()
        for reader in readers:
            reader.conn.interrupt()
        pool.shutdown(wait=True)
        for reader in readers:
            reader.close()
