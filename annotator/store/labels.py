"""Labels: append-only rows, retractions, the current state, and suggestion decisions.

Nothing is updated in place. ``add_label`` appends a row and points ``label_state`` at it;
``retract`` appends a row that withdraws an earlier one and points ``label_state`` back at
the newest row still standing. History and multi-level undo follow from that for free.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlite_utils import Database

from annotator.errors import NotFound
from annotator.models import SCHEMA_VERSION, Decision, Label, utcnow
from annotator.store import verdict_summary
from annotator.store._json import dumps
from annotator.store.db import write
from annotator.store.rows import decode, decode_one, json_columns, select

_COLS = select(Label)
_DECODE = json_columns("evidence_steps", "extra")


def label_row(label: Label) -> tuple:
    """The stored columns of ``label`` in ``LABEL_COLUMNS`` order."""
    return (
        SCHEMA_VERSION,
        label.trajectory_id,
        label.mode_id,
        label.annotator,
        label.verdict,
        label.onset_step,
        dumps(label.evidence_steps) if label.evidence_steps else "[]",
        label.quote,
        label.note,
        label.rationale,
        label.confidence,
        label.provenance,
        label.run_id,
        None if label.grounded is None else int(label.grounded),
        label.taxonomy_hash,
        label.retracts,
        dumps(label.extra) if label.extra else "{}",
        label.created_at.isoformat(),
    )


#: The columns a label is written with (an import in progress stages its labels with the same).
LABEL_COLUMNS = (
    "schema_version, trajectory_id, mode_id, annotator, verdict, onset_step, evidence_steps, quote, note,"
    " rationale, confidence, provenance, run_id, grounded, taxonomy_hash, retracts, extra, created_at"
)
#: Their names, in that order: where each value of a stored row (``label_row``) stands.
LABEL_COLUMN_NAMES = tuple(c.strip() for c in LABEL_COLUMNS.split(","))
_INSERT = f"INSERT INTO labels ({LABEL_COLUMNS}) VALUES ({', '.join('?' for _ in LABEL_COLUMN_NAMES)})"


def _insert(db: Database, label: Label) -> int:
    return db.execute(_INSERT, label_row(label)).lastrowid


def add_label(db: Database, label: Label) -> int:
    """Append a label and make it the current one for its (trajectory, annotator, mode)."""
    return add_labels(db, [label])[0]


def add_labels(db: Database, labels: Iterable[Label]) -> list[int]:
    """Append several labels in one transaction (an import, a run's verdicts for a trajectory).

    Rows are written with one ``executemany`` and ``label_state`` is pointed at the newest
    new row of each key by one statement: an import of thousands of labels stays fast.
    """
    labels = list(labels)
    if any(label.retracts is not None for label in labels):
        raise ValueError("use retract() to withdraw a label")
    if not labels:
        return []
    with write(db):
        before = db.execute("SELECT coalesce(max(id), 0) FROM labels").fetchone()[0]
        db.conn.executemany(_INSERT, [label_row(label) for label in labels])
        make_current(db, before)
        return [r[0] for r in db.execute("SELECT id FROM labels WHERE id > ? ORDER BY id", [before])]


#: Above every row id (SQLite's largest integer): the end of a range of rows that has none.
_LAST_ROW = 2**63 - 1


def make_current(db: Database, after: int, upto: int = _LAST_ROW) -> None:
    """Point ``label_state`` at the labels of rows ``after`` < id ≤ ``upto`` (by default every
    one appended after ``after``), the newest of each key winning (one INSERT ... SELECT: far
    cheaper than a bound row per label), fold the changed trajectories' verdicts into
    ``verdict_summary`` and note when their sources wrote."""
    db.execute(
        "INSERT OR REPLACE INTO label_state (trajectory_id, annotator, mode_id, label_id)"
        " SELECT trajectory_id, annotator, mode_id, id FROM labels WHERE id > ? AND id <= ? ORDER BY id",
        [after, upto],
    )
    verdict_summary.labels_made_current(db, after, upto)
    note_activity(db, after, upto)


def note_activity(db: Database, after: int, upto: int = _LAST_ROW) -> None:
    """Raise each source's time in ``label_activity`` (when it last wrote a label) to the newest
    ``created_at`` of its labels of rows ``after`` < id ≤ ``upto``.

    Each row is offered to its source's row, which takes it only if it is newer: a GROUP BY
    would sort every row of the range first (an import's half a million labels: 0.31 s of CPU
    against 0.17 s)."""
    db.execute(
        "INSERT INTO label_activity (annotator, written_at) SELECT annotator, created_at FROM labels"
        " WHERE id > ? AND id <= ? ON CONFLICT (annotator) DO UPDATE SET written_at = excluded.written_at"
        " WHERE excluded.written_at > written_at",
        [after, upto],
    )


def retract(db: Database, label_id: int, annotator: str) -> Label | None:
    """Withdraw label ``label_id`` (undo). Returns the label that is current afterwards, if any."""
    with write(db):
        target = decode_one(db.execute(f"SELECT {_COLS} FROM labels WHERE id = ?", [label_id]), Label, _DECODE)
        if target is None:
            raise NotFound(f"no label with id {label_id}")
        if target.retracts is not None:
            raise ValueError(f"label {label_id} is itself a retraction")
        if db.execute("SELECT 1 FROM labels WHERE retracts = ?", [label_id]).fetchone():
            raise ValueError(f"label {label_id} is already retracted")
        retraction = _insert(
            db,
            target.model_copy(
                update={
                    "id": None,
                    "annotator": target.annotator,
                    "verdict": None,
                    "retracts": label_id,
                    "extra": {"retracted_by": annotator},
                    "created_at": utcnow(),
                }
            ),
        )
        note_activity(db, retraction - 1, retraction)
        newest = decode_one(db.execute(
            f"SELECT {_COLS} FROM labels l WHERE trajectory_id = ? AND annotator = ? AND mode_id = ?"
            " AND retracts IS NULL AND NOT EXISTS (SELECT 1 FROM labels r WHERE r.retracts = l.id)"
            " ORDER BY id DESC LIMIT 1",
            [target.trajectory_id, target.annotator, target.mode_id],
        ), Label, _DECODE)
        key = [target.trajectory_id, target.annotator, target.mode_id]
        if newest is None:
            db.execute(
                "DELETE FROM label_state WHERE trajectory_id = ? AND annotator = ? AND mode_id = ?", key
            )
        else:
            db.execute(
                "INSERT OR REPLACE INTO label_state (trajectory_id, annotator, mode_id, label_id)"
                " VALUES (?, ?, ?, ?)",
                [*key, newest.id],
            )
        verdict_summary.mark(db, target.annotator, target.trajectory_id)
        verdict_summary.refresh(db)
        return newest


def current_labels(
    db: Database,
    trajectory_id: str | None = None,
    annotator: str | None = None,
    *,
    include_cleared: bool = False,
) -> list[Label]:
    """The label standing now for each (trajectory, annotator, mode), filtered as asked.

    A tag that was cleared (verdict None) is left out unless ``include_cleared``.
    """
    sql = f"SELECT {select(Label, table='l')} FROM label_state s JOIN labels l ON l.id = s.label_id"
    where, params = [], []
    if trajectory_id is not None:
        where.append("s.trajectory_id = ?")
        params.append(trajectory_id)
    if annotator is not None:
        where.append("s.annotator = ?")
        params.append(annotator)
    if not include_cleared:
        where.append("l.verdict IS NOT NULL")
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY s.trajectory_id, s.annotator, s.mode_id"
    return decode(db.execute(sql, params), Label, _DECODE)


def label_rows(db: Database, annotators: Sequence[str] | None = None) -> list[tuple]:
    """Current labels as plain tuples (trajectory_id, annotator, mode_id, verdict, onset_step),
    for the reports, which aggregate millions of cells and need no model objects."""
    sql = (
        "SELECT s.trajectory_id, s.annotator, s.mode_id, l.verdict, l.onset_step FROM label_state s"
        " JOIN labels l ON l.id = s.label_id WHERE l.verdict IS NOT NULL"
    )
    params: list = []
    if annotators is not None:
        sql += f" AND s.annotator IN ({', '.join('?' for _ in annotators)})"
        params.extend(annotators)
    return db.execute(sql, params).fetchall()


def history(db: Database, trajectory_id: str, annotator: str | None = None) -> list[Label]:
    """Every row ever written for a trajectory (and annotator), oldest first."""
    sql = f"SELECT {_COLS} FROM labels WHERE trajectory_id = ?"
    params: list = [trajectory_id]
    if annotator is not None:
        sql += " AND annotator = ?"
        params.append(annotator)
    return decode(db.execute(sql + " ORDER BY id", params), Label, _DECODE)


def get_label(db: Database, label_id: int) -> Label:
    label = decode_one(db.execute(f"SELECT {_COLS} FROM labels WHERE id = ?", [label_id]), Label, _DECODE)
    if label is None:
        raise NotFound(f"no label with id {label_id}")
    return label


def annotators(db: Database) -> list[str]:
    """Every annotator (person, run or dataset) that has a current label."""
    return [r[0] for r in db.execute("SELECT DISTINCT annotator FROM label_state ORDER BY annotator")]


#: The decision row that takes an earlier decision back (undo): the suggestion is undecided again.
WITHDRAWN = "withdrawn"


def record_decision(db: Database, suggestion: Label, annotator: str, decision: Decision | None) -> None:
    """Append ``annotator``'s decision on a suggestion; None withdraws the standing one (undo).

    Decisions are append-only like labels: the newest row per (suggestion, annotator) counts.
    """
    if suggestion.id is None:
        raise ValueError("the suggestion must be a stored label")
    with write(db):
        db.execute(
            "INSERT INTO suggestion_decisions (label_id, trajectory_id, mode_id, annotator, decision,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [suggestion.id, suggestion.trajectory_id, suggestion.mode_id, annotator, decision or WITHDRAWN,
             utcnow().isoformat()],
        )


def decide_suggestion(
    db: Database, suggestion: Label, annotator: str, decision: Decision, *, taxonomy_hash: str | None = None
) -> int | None:
    """Record an annotator's accept/reject of a machine suggestion.

    Accepting also writes the annotator's own label (provenance "accepted", ``run_id`` = the
    suggestion's run) in the same transaction; returns that label's id.
    """
    with write(db):
        record_decision(db, suggestion, annotator, decision)
        if decision != "accepted":
            return None
        return add_label(
            db,
            Label(
                trajectory_id=suggestion.trajectory_id,
                mode_id=suggestion.mode_id,
                annotator=annotator,
                verdict=suggestion.verdict,
                onset_step=suggestion.onset_step,
                evidence_steps=suggestion.evidence_steps,
                quote=suggestion.quote,
                provenance="accepted",
                run_id=suggestion.run_id,
                taxonomy_hash=taxonomy_hash or suggestion.taxonomy_hash,
                extra={"suggestion_label_id": suggestion.id},
            ),
        )


def suggestion_decisions(db: Database, trajectory_id: str, annotator: str) -> dict[int, tuple[Decision, datetime]]:
    """The standing decision of ``annotator`` on each suggestion (by label id) of a trajectory;
    a suggestion whose newest decision was withdrawn is left out (undecided)."""
    rows = db.execute(
        "SELECT label_id, decision, created_at FROM suggestion_decisions WHERE trajectory_id = ?"
        " AND annotator = ? ORDER BY id",
        [trajectory_id, annotator],
    ).fetchall()
    latest = {r[0]: (r[1], datetime.fromisoformat(r[2])) for r in rows}
    return {label_id: d for label_id, d in latest.items() if d[0] != WITHDRAWN}
