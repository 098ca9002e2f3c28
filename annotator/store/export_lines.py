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
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from sqlite_utils import Database

from annotator.models import LABEL_EXPORT_FORMAT, SCHEMA_VERSION
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


def export_query(sources: Sequence[Finished], mode_ids: Sequence[str], flt: TrajectoryFilter,
                 ordered: bool = ORDERED) -> tuple[str, list]:
    """The query :func:`export_lines` runs and its parameters; ``ordered``: ``group_concat`` is
    told the order of a trajectory's lines (SQLite 3.44 and later), rather than given them in it."""
    names = ", ".join("(?, ?)" for _ in sources)
    cases = [_finished(k, rule) for k, rule in enumerate(sources)]
    cells, params = _cells(mode_ids, flt)
    sql = (
        f"WITH src(k, name) AS (VALUES {names})"
        f" SELECT {_lines(ordered)}{cells} AND CASE src.k {' '.join(c for c, _ in cases)} END"
        " GROUP BY t.id ORDER BY t.id"
    )
    return sql, [*(v for k, rule in enumerate(sources) for v in (k, rule.source)), *params,
                 *(p for _, ps in cases for p in ps)]


def export_lines(db: Database, sources: Sequence[Finished], mode_ids: Sequence[str], flt: TrajectoryFilter) -> Iterator[bytes]:
    """The JSONL lines (each ending in a newline) of the current verdicts of ``sources`` on
    ``mode_ids``, on the filter's trajectories each source has finished: one value per
    trajectory, in trajectory order; a trajectory's sources in the order given, each source's
    modes in order."""
    cursor = db.execute(*export_query(sources, mode_ids, flt))
    while rows := cursor.fetchmany(FETCH):
        yield b"".join([r[0] for r in rows])
