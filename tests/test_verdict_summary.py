"""The verdict summary stays exactly the fold of the current labels through every way labels are
written (tagging, undo, done, suggestions, imports and re-imports of label exports, pre-labelling
runs, retractions, deletes, bulk loads, the migration itself), and reports read the same
verdicts from it as from folding the cells, whatever the codebook."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np
import sqlite_utils
from click.testing import CliRunner

from annotator.annotating.session import AnnotationSession
from annotator.cli import main
from annotator.importers.importing import import_paths
from annotator.models import Label, LabelRun
from annotator.report import export
from annotator.store import open_db, runs, synthetic
from annotator.store.labels import add_labels, current_labels, retract
from annotator.store.report_tables import verdict_rows
from annotator.store.schema import MIGRATIONS
from annotator.store.trajectories import delete_trajectory
from annotator.taxonomy import load_taxonomy
from tests.report_data import MODES, add_trajectory, label_all

TAX = load_taxonomy()


def _expected(db) -> dict[tuple[str, str], tuple]:
    """The fold of the current labels, made in Python from every current label."""
    codes = dict(db.execute("SELECT mode_id, code FROM mode_codes").fetchall())
    out: dict[tuple[str, str], list] = {}
    for lab in current_labels(db, include_cleared=True):
        row = out.setdefault((lab.annotator, lab.trajectory_id), [0, 0, 0, [], 0])
        row[0] += 1
        row[4] += 1 << codes[lab.mode_id]
        row[1] += lab.verdict is not None
        row[2] += lab.verdict == "absent"
        if lab.verdict not in (None, "absent"):
            row[3].append((codes[lab.mode_id] * 2 + (lab.verdict == "present"),
                           -1 if lab.onset_step is None else lab.onset_step))
    return {k: (n, v, a, sorted(c), bits) for k, (n, v, a, c, bits) in out.items()}


def _stored(db) -> dict[tuple[str, str], tuple]:
    out = {}
    for annotator, tid, n, v, a, cells, bits in db.execute("SELECT * FROM verdict_summary"):
        pairs = np.fromstring(cells, dtype=np.int64, sep=",").reshape(-1, 2).tolist() if cells else []
        out[(annotator, tid)] = (n, v, a, sorted(map(tuple, pairs)), bits)
    return out


def assert_current(db) -> None:
    assert db.execute("SELECT count(*) FROM verdict_summary_stale").fetchone()[0] == 0, "every write refreshed"
    assert _stored(db) == _expected(db)
    assert db.execute("SELECT count(*) FROM label_state WHERE mode_id NOT IN (SELECT mode_id FROM mode_codes)"
                      ).fetchone()[0] == 0


def _folded(db, annotator: str, mode_ids, after=None, before=None) -> object:
    """verdict_rows as SQLite folds the cells (the summary set aside by a pending mark)."""
    db.execute("INSERT INTO verdict_summary_stale VALUES (?, '~')", [annotator])
    try:
        return verdict_rows(db, annotator, mode_ids, after, before)
    finally:
        db.execute("DELETE FROM verdict_summary_stale WHERE trajectory_id = '~'")


def _same_verdicts(a, b) -> None:
    assert a.tids.tolist() == b.tids.tolist()
    assert a.total.tolist() == b.total.tolist() and a.absent.tolist() == b.absent.tolist()
    assert sorted(map(tuple, a.cells.tolist())) == sorted(map(tuple, b.cells.tolist()))
    assert a.outside_codebook == b.outside_codebook


def test_tagging_undo_done_and_suggestions_keep_the_summary_current(db):
    add_trajectory(db, "t1")
    session = AnnotationSession(db, "t1", "alice", TAX)
    session.toggle("FM-1.1", 3)
    assert_current(db)
    session.toggle("FM-1.1", 5)  # moved
    session.toggle("FM-2.3", 2)
    assert_current(db)
    session.toggle("FM-2.3", 2)  # untagged: a cleared label
    assert_current(db)
    session.mark_done()
    assert_current(db)
    session.undo()
    assert_current(db)
    run = runs.create_run(db, LabelRun(kind="llm", model="m"))
    add_labels(db, [Label(trajectory_id="t1", mode_id="FM-1.3", annotator=run.annotator, verdict="present",
                          onset_step=2, provenance="llm", run_id=run.id)])
    assert_current(db)
    suggestion = session.suggestion_for("FM-1.3")
    session.decide(suggestion, "accepted")
    assert_current(db)
    session.decide(session.suggestion_for("FM-1.3"), "rejected")
    assert_current(db)
    session.undo()
    assert_current(db)


def test_retractions_bulk_writes_and_deletes_keep_the_summary_current(db):
    for tid in ("t1", "t2", "t3"):
        add_trajectory(db, tid)
        label_all(db, tid, "alice", {"FM-1.1": 4, "FM-3.2": None}, unknown=("FM-2.1",))
    same_cell = [Label(trajectory_id="t1", mode_id="FM-1.2", annotator="bob", verdict=v, provenance="human")
                 for v in ("present", "absent", "unknown")]  # the last of a cell in one batch wins
    ids = add_labels(db, same_cell)
    assert_current(db)
    retract(db, ids[-1], "bob")  # back to the one before
    assert_current(db)
    only = add_labels(db, [Label(trajectory_id="t2", mode_id="FM-1.2", annotator="bob", verdict="present",
                                 provenance="human")])
    retract(db, only[0], "bob")  # back to none
    assert_current(db)
    delete_trajectory(db, "t3")
    assert_current(db)
    assert ("alice", "t3") not in _stored(db)


def test_imports_and_merges_of_label_exports_keep_the_summary_current(db, tmp_path):
    for i in range(6):
        add_trajectory(db, f"t{i}")
        label_all(db, f"t{i}", "alice", {"FM-1.1": i} if i % 2 else {"FM-2.2": None})
        label_all(db, f"t{i}", "judge", {"FM-1.1": 1}, provenance="imported", done=False)
    path = tmp_path / "labels.jsonl"
    path.write_text(export.render(db, "jsonl", ["alice", "judge"], TAX), encoding="utf-8")
    fresh = open_db(tmp_path / "fresh.db")
    import_paths(fresh, [path])  # stubs and labels into an empty database
    assert_current(fresh)
    import_paths(fresh, [path])  # unchanged: nothing written
    assert_current(fresh)
    label_all(db, "t1", "judge", {"FM-3.3": 7}, provenance="imported", done=False)
    path.write_text(export.render(db, "jsonl", ["judge"], TAX), encoding="utf-8")
    import_paths(fresh, [path])  # merged: the changed labels only
    assert_current(fresh)
    assert _stored(fresh)[("judge", "t1")] == _stored(db)[("judge", "t1")]
    fresh.close()


def test_a_prelabelling_run_keeps_the_summary_current(db, db_path):
    for i in range(3):
        add_trajectory(db, f"t{i}")
    result = CliRunner().invoke(main, ["--db", str(db_path), "prelabel", "--labeller", "rules", "-q"])
    assert result.exit_code == 0, result.output
    assert db.execute("SELECT count(*) FROM label_state WHERE annotator = 'run:1'").fetchone()[0] > 0
    assert_current(db)


def test_a_bulk_load_and_the_migration_fold_what_is_stored(db_path, tmp_path):
    db = sqlite_utils.Database(sqlite3.connect(db_path))
    MIGRATIONS.apply(db, stop_before="012_verdict_summary")
    db.close()
    db = open_db(db_path)  # migrated: built from nothing
    assert_current(db)
    ids = [add_trajectory(db, f"t{i}") for i in range(5)]
    onsets = np.where(np.random.default_rng(3).random((5, len(MODES))) < 0.3, 4, -1)
    synthetic.insert_label_matrices(db, ids, MODES, [("alice", "human", onsets)])
    assert_current(db)
    assert {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")} >= {
        "verdict_summary_delete", "verdict_summary_update", "verdict_summary_label"}
    db.close()

    old = tmp_path / "old.db"  # labels written before the migration
    db = sqlite_utils.Database(sqlite3.connect(old))
    MIGRATIONS.apply(db, stop_before="012_verdict_summary")
    db.execute("INSERT INTO trajectories (id, schema_version, source_format, content_hash, imported_at)"
               " VALUES ('t1', 1, 'test', 'h', '2026-01-01')")
    for i, (mode, verdict, onset) in enumerate((("FM-1.1", "present", 3), ("FM-1.2", "absent", None),
                                                ("FM-2.1", None, None), ("FM-9.9", "unknown", None))):
        db.execute("INSERT INTO labels (schema_version, trajectory_id, mode_id, annotator, verdict, onset_step,"
                   " provenance, created_at) VALUES (1, 't1', ?, 'alice', ?, ?, 'human', '2026-01-01')",
                   [mode, verdict, onset])
        db.execute("INSERT INTO label_state VALUES ('t1', 'alice', ?, ?)", [mode, i + 1])
    db.conn.commit()
    db.close()
    db = open_db(old)
    assert_current(db)
    assert _stored(db)[("alice", "t1")][:3] == (4, 3, 1)
    db.close()


def test_reports_read_the_same_verdicts_from_the_summary_as_from_the_cells(db):
    for i in range(8):
        add_trajectory(db, f"t{i}")
        label_all(db, f"t{i}", "alice", {"FM-1.1": i, "FM-3.1": None} if i % 3 else {}, unknown=("FM-2.4",),
                  done=False)
    add_labels(db, [Label(trajectory_id="t2", mode_id="FM-1.5", annotator="alice", verdict=None,
                          provenance="human")])  # a cleared tag: a label without a verdict
    read = verdict_rows(db, "alice", MODES)
    _same_verdicts(read, _folded(db, "alice", MODES))
    backwards = tuple(reversed(MODES))  # another codebook order: the codes are mapped to it
    _same_verdicts(verdict_rows(db, "alice", backwards), _folded(db, "alice", backwards))
    fewer = MODES[:10]  # a codebook without some labelled modes: folded, the others counted outside it
    outside = verdict_rows(db, "alice", fewer)
    _same_verdicts(outside, _folded(db, "alice", fewer))
    assert outside.outside_codebook == 8 * 4
    _same_verdicts(verdict_rows(db, "alice", MODES, "t2", "t6"), _folded(db, "alice", MODES, "t2", "t6"))
    assert read.total.tolist() == [14, 14, 13, 14, 14, 14, 14, 14]  # t2 has a cleared tag



def test_label_state_gains_rows_only_where_the_summary_is_folded_again():
    """Inserts into label_state fire no trigger (one per label row would slow every import), so
    the statements that insert them are in the label writes, which fold the summary, and in the
    bulk loads, which rebuild it."""
    root = Path(__file__).resolve().parents[1] / "annotator"
    writers = {p.relative_to(root).as_posix() for p in root.rglob("*.py")
               if re.search(r"INTO\s+label_state\b", p.read_text(encoding="utf-8"))}
    assert writers == {"store/labels.py", "store/synthetic.py"}


def _write_cost(tmp_path, n: int) -> int:
    """SQLite's virtual-machine steps for one tag on a database of ``n`` labelled trajectories
    (ANALYZEd, as the benchmark databases are)."""
    db = open_db(tmp_path / f"{n}.db")
    ids = [add_trajectory(db, f"t{i:05d}", steps=1) for i in range(n)]
    onsets = np.where(np.random.default_rng(n).random((n, len(MODES))) < 0.2, 0, -1)
    synthetic.insert_label_matrices(db, ids, MODES, [("alice", "human", onsets), ("judge", "llm", onsets)])
    db.conn.execute("ANALYZE")
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    db.conn.set_progress_handler(count, 100)
    add_labels(db, [Label(trajectory_id="t00007", mode_id="FM-1.1", annotator="alice", verdict="present",
                          provenance="human")])
    db.conn.set_progress_handler(None, 0)
    assert_current(db)
    db.close()
    return steps[0]


def test_a_write_folds_its_own_cells_not_every_label(tmp_path):
    """Twenty times the labels must not make one tag cost more (SQLite's planner, left to itself,
    scanned every label to fold the new one's trajectory)."""
    small, large = _write_cost(tmp_path, 50), _write_cost(tmp_path, 1000)
    assert large < 2 * small + 50, (small, large)
