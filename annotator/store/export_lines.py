"""The lines of a label export, written by SQLite itself.

An export of half a million labels is bound by the cost of a row: reading fifteen columns
into Python objects, building a dict and serialising it costs more than SQLite spends finding
the row. So one query per source selects its current verdicts on the filter's trajectories
and has ``json_object`` write each JSONL line, trajectory fields included, as bytes; Python
only joins and writes them. The keys are ``report.export.LONG_COLUMNS`` (the source before the
trajectory id, as exports have always been written), the values as the store holds them: JSON
columns embedded as JSON, ``grounded`` a boolean, a ``confidence`` with all the digits that
give back the same number (SQLite prints 15 significant digits, which is not always enough;
such a value is printed with 17).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlite_utils import Database

from annotator.models import LABEL_EXPORT_FORMAT, SCHEMA_VERSION
from annotator.store.trajectories import _where
from annotator.views import TrajectoryFilter

#: Rows a cursor hands over at a time.
FETCH = 4096

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
_LINE = "CAST(json_object('format', ?, 'schema_version', ?, 'source', s.annotator, {}) AS BLOB)".format(
    ", ".join(f"'{f}', {_VALUES.get(f, 'l.' + f)}" for f in (*LABEL_FIELDS, *TRAJECTORY_FIELDS))
)


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


def export_lines(
    db: Database, annotator: str, mode_ids: Sequence[str], flt: TrajectoryFilter, *,
    reviewed: bool = False, all_of: Sequence[str] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """(trajectory id, JSONL line without its newline) of each current verdict of the annotator
    on ``mode_ids``, on the filter's trajectories, in trajectory and mode order.

    ``reviewed`` keeps the trajectories the annotator marked done; ``all_of`` those with a
    verdict of the annotator on each of these modes.
    """
    sql, params = _cells(annotator, mode_ids, flt)
    if reviewed:
        sql += (" AND EXISTS (SELECT 1 FROM review_state r WHERE r.trajectory_id = t.id AND r.annotator = ?"
                " AND r.status = 'done')")
        params.append(annotator)
    if all_of is not None:
        marks = ", ".join("?" for _ in all_of)
        sql += (" AND (SELECT count(*) FROM label_state c JOIN labels cl ON cl.id = c.label_id"
                " WHERE c.annotator = ? AND c.trajectory_id = t.id AND cl.verdict IS NOT NULL"
                f" AND c.mode_id IN ({marks})) = ?")
        params += [annotator, *all_of, len(all_of)]
    cursor = db.execute(f"SELECT t.id, {_LINE}{sql} ORDER BY t.id, s.mode_id",
                        [LABEL_EXPORT_FORMAT, SCHEMA_VERSION, *params])
    while rows := cursor.fetchmany(FETCH):
        yield from rows
