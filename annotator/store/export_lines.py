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
each source's modes in order: the query's loops are nested in that order (trajectories by id,
then sources, then each source's labels by the index that leads with it), so ``group_concat``
receives them so.
"""

from __future__ import annotations

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
    "evidence_steps": "json(l.evidence_steps)",
    "extra": "json(l.extra)",
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
_LINES = (f"CAST(replace(group_concat({_LABEL}, char(10)) || char(10), '}}' || char(10), {_TRAJECTORY} || char(10))"
          " AS BLOB)")


class Finished(NamedTuple):
    """Which trajectories of a source an export holds: ``reviewed`` those it marked done,
    ``all_of`` those with a verdict of it on each of these modes; neither, all it labelled."""

    source: str
    reviewed: bool = False
    all_of: Sequence[str] | None = None


def _cells(annotator: str, mode_ids: Sequence[str], flt: TrajectoryFilter) -> tuple[str, list]:
    """FROM and WHERE of the annotator's current verdicts on ``mode_ids`` of the filter's trajectories."""
    where, params = _where(flt)
    marks = ", ".join("?" for _ in mode_ids)
    sql = (
        " FROM trajectories t JOIN label_state s ON s.annotator = ? AND s.trajectory_id = t.id"
        " JOIN labels l ON l.id = s.label_id"
        f" WHERE {' AND '.join(where)} AND l.verdict IS NOT NULL AND s.mode_id IN ({marks})"
    )
    return sql, [annotator, *params, *mode_ids]


def modes_with_verdicts(db: Database, annotator: str, mode_ids: Sequence[str], flt: TrajectoryFilter) -> list[str]:
    """Those of ``mode_ids`` the annotator gave a verdict on somewhere among the filter's trajectories."""
    sql, params = _cells(annotator, mode_ids, flt)
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


def export_lines(db: Database, sources: Sequence[Finished], mode_ids: Sequence[str], flt: TrajectoryFilter) -> Iterator[bytes]:
    """The JSONL lines (each ending in a newline) of the current verdicts of ``sources`` on
    ``mode_ids``, on the filter's trajectories each source has finished: one value per
    trajectory, in trajectory order; a trajectory's sources in the order given, each source's
    modes in order."""
    where, params = _where(flt)
    names = ", ".join("(?, ?)" for _ in sources)
    cases = [_finished(k, rule) for k, rule in enumerate(sources)]
    marks = ", ".join("?" for _ in mode_ids)
    # CROSS JOIN keeps the loops in the order the lines are written (see the module's docstring);
    # the trajectories are read by their id's index for the same reason.
    sql = (
        f"WITH src(k, name) AS (VALUES {names})"
        f" SELECT {_LINES} FROM trajectories t INDEXED BY sqlite_autoindex_trajectories_1"
        " CROSS JOIN src CROSS JOIN label_state s ON s.annotator = src.name AND s.trajectory_id = t.id"
        " JOIN labels l ON l.id = s.label_id"
        f" WHERE {' AND '.join(where)} AND l.verdict IS NOT NULL AND +s.mode_id IN ({marks})"
        f" AND CASE src.k {' '.join(c for c, _ in cases)} END"
        " GROUP BY t.id ORDER BY t.id"
    )
    cursor = db.execute(sql, [*(v for k, rule in enumerate(sources) for v in (k, rule.source)), *params, *mode_ids,
                              *(p for _, ps in cases for p in ps)])
    while rows := cursor.fetchmany(FETCH):
        yield b"".join([r[0] for r in rows])
