"""Each source's current verdicts on a trajectory, folded into one row when they are written.

A report over a million trajectories read 14 million (trajectory, mode) cells of a source and
let SQLite fold them into one row per trajectory: about 15 s of CPU a source, nearly all of it
SQLite's aggregates per cell. ``verdict_summary`` keeps that fold, one row per (annotator,
trajectory): how many labels are current, how many have a verdict, how many of those are
"absent", and the verdicts that are not "absent" as comma-separated integer pairs ``2 × mode
code + (1 if present else 0), onset step or -1``, so that a report reads a million small rows.

The fold does not depend on a codebook: modes are numbered once and for all in ``mode_codes``
(the order they are first seen), and ``summary_modes`` lists every mode an annotator's summary
rows have ever covered (a superset of those they cover now). A reader maps the codes to its
codebook's order and uses the summary only when that list lies inside the codebook; otherwise
the counts would include modes the codebook does not have, and it folds the cells itself
(``report_tables.verdict_rows``).

Triggers on ``label_state`` (and on ``labels``, should a row ever change in place) record every
(annotator, trajectory) whose current labels changed in ``verdict_summary_stale``, whatever
wrote them; :func:`refresh`, called by the store's label writes in their own transaction,
folds those pairs again and empties the list. A write that did not refresh leaves the list
non-empty, and a reader then folds that annotator's cells instead of trusting the summary: the
summary is never read while it differs from the labels.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlite_utils import Database

#: The fold of one (annotator, trajectory)'s current cells, over ``label_state s`` joined with
#: ``labels l`` and ``mode_codes c``: the columns of ``verdict_summary`` after the key.
FOLD = (
    "count(*), count(l.verdict), coalesce(sum(l.verdict = 'absent'), 0),"
    " group_concat(CASE WHEN l.verdict != 'absent' THEN (c.code * 2 + (l.verdict = 'present'))"
    " || ',' || coalesce(l.onset_step, -1) END)"
)
_CELLS = "JOIN labels l ON l.id = s.label_id JOIN mode_codes c ON c.mode_id = s.mode_id"
_STALE_CELLS = (
    "FROM verdict_summary_stale d JOIN label_state s ON s.trajectory_id = d.trajectory_id"
    " AND s.annotator = d.annotator"
)


def create(db: Database) -> None:
    """The tables and triggers (migration 012), filled from the labels already stored."""
    db.execute("CREATE TABLE mode_codes (code INTEGER PRIMARY KEY, mode_id TEXT NOT NULL UNIQUE)")
    db.execute(
        "CREATE TABLE summary_modes (annotator TEXT NOT NULL, code INTEGER NOT NULL,"
        " PRIMARY KEY (annotator, code)) WITHOUT ROWID"
    )
    db.execute(
        """
        CREATE TABLE verdict_summary (
            annotator TEXT NOT NULL,
            trajectory_id TEXT NOT NULL,
            labels INTEGER NOT NULL,
            verdicts INTEGER NOT NULL,
            absent INTEGER NOT NULL,
            cells TEXT,
            PRIMARY KEY (annotator, trajectory_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        "CREATE TABLE verdict_summary_stale (annotator TEXT NOT NULL, trajectory_id TEXT NOT NULL,"
        " PRIMARY KEY (annotator, trajectory_id)) WITHOUT ROWID"
    )
    mark = "INSERT OR IGNORE INTO verdict_summary_stale (annotator, trajectory_id) VALUES"
    db.execute(f"CREATE TRIGGER verdict_summary_insert AFTER INSERT ON label_state BEGIN"
               f" {mark} (new.annotator, new.trajectory_id); END")
    db.execute(f"CREATE TRIGGER verdict_summary_delete AFTER DELETE ON label_state BEGIN"
               f" {mark} (old.annotator, old.trajectory_id); END")
    db.execute(f"CREATE TRIGGER verdict_summary_update AFTER UPDATE ON label_state BEGIN"
               f" {mark} (old.annotator, old.trajectory_id), (new.annotator, new.trajectory_id); END")
    db.execute(f"CREATE TRIGGER verdict_summary_label AFTER UPDATE OF trajectory_id, annotator, mode_id, verdict,"
               f" onset_step ON labels BEGIN {mark} (old.annotator, old.trajectory_id),"
               f" (new.annotator, new.trajectory_id); END")
    rebuild(db)


def rebuild(db: Database) -> None:
    """Fold every current label again (the migration, and bulk loads that bypass the triggers).

    One pass over ``label_state`` in (annotator, trajectory) order by its covering index, the
    rows written in the summary's key order."""
    db.execute("DELETE FROM verdict_summary")
    db.execute("DELETE FROM verdict_summary_stale")
    db.execute("INSERT OR IGNORE INTO mode_codes (mode_id) SELECT DISTINCT mode_id FROM label_state ORDER BY 1")
    db.execute("INSERT OR IGNORE INTO summary_modes (annotator, code) SELECT DISTINCT s.annotator, c.code"
               " FROM label_state s JOIN mode_codes c ON c.mode_id = s.mode_id")
    db.execute(
        f"INSERT INTO verdict_summary SELECT s.annotator, s.trajectory_id, {FOLD} FROM label_state s"
        f" INDEXED BY idx_label_state_source {_CELLS} GROUP BY s.annotator, s.trajectory_id"
    )


def refresh(db: Database) -> None:
    """Fold again the (annotator, trajectory) pairs whose labels changed since the last refresh;
    call it inside the transaction that changed them. Costs a look at an empty table when none did."""
    if db.execute("SELECT NOT EXISTS (SELECT 1 FROM verdict_summary_stale)").fetchone()[0]:
        return
    db.execute(f"INSERT OR IGNORE INTO mode_codes (mode_id) SELECT DISTINCT s.mode_id {_STALE_CELLS}")
    db.execute("INSERT OR IGNORE INTO summary_modes (annotator, code) SELECT DISTINCT s.annotator, c.code"
               f" {_STALE_CELLS} JOIN mode_codes c ON c.mode_id = s.mode_id")
    db.execute("DELETE FROM verdict_summary WHERE (annotator, trajectory_id) IN"
               " (SELECT annotator, trajectory_id FROM verdict_summary_stale)")
    db.execute(f"INSERT INTO verdict_summary SELECT s.annotator, s.trajectory_id, {FOLD} {_STALE_CELLS} {_CELLS}"
               " GROUP BY s.annotator, s.trajectory_id")
    db.execute("DELETE FROM verdict_summary_stale")


def codebook_order(db: Database, annotator: str, mode_ids: Sequence[str]) -> list[int] | None:
    """Per mode code, its index in ``mode_ids`` (-1 for codes the annotator never used), if the
    annotator's summary rows are current and cover no mode outside ``mode_ids``; else None."""
    if db.execute("SELECT EXISTS (SELECT 1 FROM verdict_summary_stale WHERE annotator = ?)",
                  [annotator]).fetchone()[0]:
        return None
    used = db.execute("SELECT c.code, c.mode_id FROM summary_modes m JOIN mode_codes c ON c.code = m.code"
                      " WHERE m.annotator = ?", [annotator]).fetchall()
    index = {m: i for i, m in enumerate(mode_ids)}
    if any(mode not in index for _, mode in used):
        return None
    order = [-1] * (max((code for code, _ in used), default=0) + 1)
    for code, mode in used:
        order[code] = index[mode]
    return order
