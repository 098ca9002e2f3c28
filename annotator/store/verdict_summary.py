"""Each source's current verdicts on a trajectory, folded into one row when they are written.

A report over a million trajectories read 14 million (trajectory, mode) cells of a source and
let SQLite fold them into one row per trajectory: about 15 s of CPU a source, nearly all of it
SQLite's aggregates per cell. ``verdict_summary`` keeps that fold, one row per (annotator,
trajectory): how many labels are current, how many have a verdict, how many of those are
"absent", the verdicts that are not "absent" as comma-separated integer pairs ``2 × mode code
+ (1 if present else 0), onset step or -1``, and which modes the labels are on (``modes``, a
bit per mode code), so that a report reads a million small rows.

The fold does not depend on a codebook: modes are numbered once and for all in ``mode_codes``
(in the order they are first written). A reader maps the codes to its codebook's order and uses
the summary rows only if their ``modes`` lie inside the codebook; otherwise the counts would
include modes the codebook does not have, and it folds the cells itself
(``report_tables.verdict_rows``): a row is read as it is when its modes' bits inside the
codebook number its labels. Codes from ``OVERFLOW`` on have no bit, so a row with one of those
modes is always folded.

Kept current by the label writes, in their own transaction: ``labels.make_current`` (every
append: tagging, imports, merges, runs, reviews) folds again the (annotator, trajectory) pairs of
the labels it made current, and ``labels.retract`` its pair. Deletes and updates of
``label_state`` or ``labels``, whoever makes them, are recorded by triggers in
``verdict_summary_stale`` (a label replaced by a newer one too: sqlite-utils turns on
recursive triggers, so a REPLACE fires the delete trigger), which :func:`refresh` folds again and
empties (``delete_trajectory`` calls it); a reader finding the list non-empty for an annotator folds that annotator's cells
instead of trusting the summary. No trigger is made for inserts: a trigger per label row cost
an import of 566,272 labels about a second, the pairs of its new labels one pass over them.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlite_utils import Database

#: The first mode code without a bit in ``verdict_summary.modes`` (a mode appears once in a
#: row's labels, so the sum of its modes' bits stays below 2 ** 62).
OVERFLOW = 62


def _fold(codes: dict[str, int]) -> tuple[str, list]:
    """The columns of ``verdict_summary`` after the key, over ``label_state s`` ⋈ ``labels l``,
    and their parameters: each mode's code and bit are written into the statement (a CASE over
    a few modes costs less than a look-up per cell)."""
    whens = " ".join("WHEN ? THEN ?" for _ in codes) or "WHEN NULL THEN NULL"  # no label yet: no mode
    code, bit = f"CASE s.mode_id {whens} END", f"CASE s.mode_id {whens} ELSE 0 END"
    return (
        "count(*), count(l.verdict), coalesce(sum(l.verdict = 'absent'), 0),"
        f" group_concat(CASE WHEN l.verdict != 'absent' THEN (({code}) * 2 + (l.verdict = 'present'))"
        f" || ',' || coalesce(l.onset_step, -1) END), sum({bit})",
        [v for m, c in codes.items() for v in (m, c)]
        + [v for m, c in codes.items() for v in (m, 1 << c if c < OVERFLOW else 0)],
    )


def _codes(db: Database, new_modes: str, params: Sequence = ()) -> dict[str, int]:
    """Every mode's code, after numbering the modes ``new_modes`` (a SELECT of mode ids) names
    that have none (the few modes with a code are left out before DISTINCT sorts what is left:
    over an import's half a million labels, 0.13 s where sorting them all took 0.45)."""
    db.execute(f"INSERT OR IGNORE INTO mode_codes (mode_id) SELECT DISTINCT mode_id FROM ({new_modes})"
               " WHERE mode_id NOT IN (SELECT mode_id FROM mode_codes) ORDER BY 1", params)
    return dict(db.execute("SELECT mode_id, code FROM mode_codes ORDER BY code").fetchall())


def rebuild(db: Database) -> None:
    """Fold every current label again (the migration, and bulk loads that bypass the label writes).

    One pass over ``label_state`` in (annotator, trajectory) order by its covering index, the
    rows written in the summary's key order."""
    db.execute("DELETE FROM verdict_summary")
    db.execute("DELETE FROM verdict_summary_stale")
    fold, params = _fold(_codes(db, "SELECT mode_id FROM label_state"))
    db.execute(
        f"INSERT INTO verdict_summary SELECT s.annotator, s.trajectory_id, {fold} FROM label_state s"
        " INDEXED BY idx_label_state_source JOIN labels l ON l.id = s.label_id GROUP BY s.annotator, s.trajectory_id",
        params,
    )


#: The labels of a range of rows: read by rowid (SQLite would rather scan a whole index of
#: ``labels`` for their distinct keys), and the new labels' cells found from their keys (CROSS
#: JOIN keeps that order: a database's every cell otherwise).
_NEW = "FROM labels NOT INDEXED WHERE id > ? AND id <= ?"


def labels_made_current(db: Database, after: int, upto: int) -> None:
    """Fold again the (annotator, trajectory) pairs of the labels of rows ``after`` < id ≤
    ``upto`` (which ``labels.make_current`` has just made current)."""
    rows = [after, upto]
    fold, params = _fold(_codes(db, f"SELECT mode_id {_NEW}", rows))
    db.execute(
        f"INSERT OR REPLACE INTO verdict_summary SELECT s.annotator, s.trajectory_id, {fold}"
        f" FROM (SELECT DISTINCT trajectory_id, annotator {_NEW}) d"
        " CROSS JOIN label_state s ON s.trajectory_id = d.trajectory_id AND s.annotator = d.annotator"
        " JOIN labels l ON l.id = s.label_id GROUP BY s.annotator, s.trajectory_id",
        [*params, *rows],
    )
    if _any_stale(db):  # the rows these labels replaced (sqlite-utils turns recursive triggers on), and others
        db.execute("DELETE FROM verdict_summary_stale WHERE (annotator, trajectory_id) IN"
                   f" (SELECT annotator, trajectory_id {_NEW})", rows)
        refresh(db)


def _any_stale(db: Database) -> bool:
    return db.execute("SELECT EXISTS (SELECT 1 FROM verdict_summary_stale)").fetchone()[0] == 1


def mark(db: Database, annotator: str, trajectory_id: str) -> None:
    """Record that one (annotator, trajectory)'s current labels changed; :func:`refresh` folds it."""
    db.execute("INSERT OR IGNORE INTO verdict_summary_stale (annotator, trajectory_id) VALUES (?, ?)",
               [annotator, trajectory_id])


def refresh(db: Database) -> None:
    """Fold again the pairs recorded in ``verdict_summary_stale`` and empty it; call it inside the
    transaction that changed them. Costs a look at an empty table when nothing is recorded."""
    if not _any_stale(db):
        return
    fold, params = _fold(_codes(db, "SELECT s.mode_id FROM verdict_summary_stale d CROSS JOIN label_state s"
                                    " ON s.trajectory_id = d.trajectory_id AND s.annotator = d.annotator"))
    db.execute("DELETE FROM verdict_summary WHERE (annotator, trajectory_id) IN"
               " (SELECT annotator, trajectory_id FROM verdict_summary_stale)")
    db.execute(
        f"INSERT INTO verdict_summary SELECT s.annotator, s.trajectory_id, {fold}"
        " FROM verdict_summary_stale d CROSS JOIN label_state s ON s.trajectory_id = d.trajectory_id"
        " AND s.annotator = d.annotator JOIN labels l ON l.id = s.label_id GROUP BY s.annotator, s.trajectory_id",
        params,
    )
    db.execute("DELETE FROM verdict_summary_stale")


def codebook_codes(db: Database, annotator: str, mode_ids: Sequence[str]) -> tuple[list[int], int] | None:
    """Per mode code, its index in ``mode_ids`` (-1 if the codebook lacks it), and the bits of
    ``verdict_summary.modes`` the codebook's modes have; None if the annotator's summary rows
    are not current (a change recorded and not yet folded)."""
    if db.execute("SELECT EXISTS (SELECT 1 FROM verdict_summary_stale WHERE annotator = ?)",
                  [annotator]).fetchone()[0]:
        return None
    index = {m: i for i, m in enumerate(mode_ids)}
    codes = db.execute("SELECT code, mode_id FROM mode_codes").fetchall()
    order = [-1] * (max((code for code, _ in codes), default=0) + 1)
    bits = 0
    for code, mode in codes:
        if mode in index:
            order[code] = index[mode]
            bits |= (1 << code) if code < OVERFLOW else 0
    return order, bits
