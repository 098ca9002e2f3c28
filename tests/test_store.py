"""The store: migrations, connection settings, lazy steps, search, append-only labels, review
state, runs, attributions and idempotent saving."""

from __future__ import annotations

import sqlite3

import pytest
import sqlite_utils

from annotator.errors import NotFound, StoreError
from annotator.importers.base import ImportOptions, finish
from annotator.models import Attribution, Label, LabelRun, Step, Trajectory
from annotator.store import data_version, open_db, open_db_to_read, write
from annotator.store.attributions import attributions, save_attribution
from annotator.store.db import BUSY_TIMEOUT_S
from annotator.store.labels import (
    add_label,
    add_labels,
    annotators,
    current_labels,
    decide_suggestion,
    history,
    label_rows,
    retract,
    suggestion_decisions,
)
from annotator.store.requests import run_spend
from annotator.store.review import finished_by, get_review, review_states, set_review
from annotator.store.runs import create_run, get_run, list_runs, update_run
from annotator.store.schema import MIGRATIONS
from annotator.store.search import search_steps
from annotator.store.steps import count_steps, get_step, get_steps, step_previews
from annotator.store.trajectories import (
    delete_trajectory,
    get_summary,
    get_trajectory,
    list_trajectories,
    resolve_id,
    save_trajectory,
)
from annotator.views import TrajectoryFilter


def _traj(tid: str = "t1", n: int = 5, system: str = "AG2", text: str = "step") -> Trajectory:
    steps = [Step(index=i, agent=f"agent{i % 2}", content=f"{text} number {i}" + (" needle" if i == 3 else ""))
             for i in range(n)]
    return finish(Trajectory(id=tid, source_format="openai_chat", system=system, steps=steps, raw=b"raw"),
                  ImportOptions())


def _label(mode: str = "FM-1.1", verdict: str | None = "present", annotator: str = "alice", tid: str = "t1"):
    return Label(trajectory_id=tid, mode_id=mode, annotator=annotator, verdict=verdict)


def test_migrations_are_applied_once_and_idempotent(db_path):
    db = open_db(db_path)
    applied = [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations ORDER BY id")]
    assert applied == [m.name for m in MIGRATIONS._migrations]
    db.close()
    db = open_db(db_path)  # opening again applies nothing new and fails on nothing
    assert [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations ORDER BY id")] == applied
    assert {"trajectories", "steps", "steps_fts", "labels", "label_state", "review_state", "label_runs",
            "attributions"} <= set(db.table_names())



def test_the_cli_says_when_it_upgrades_a_database_and_only_then(db_path):
    """A database of an earlier release is migrated by the first command that opens it, which
    says so on stderr (indexing millions of labels takes minutes); a new one and an upgraded
    one are opened without a word."""
    from click.testing import CliRunner

    from annotator.cli import main

    old = sqlite_utils.Database(sqlite3.connect(db_path))
    MIGRATIONS.apply(old, stop_before="013_reference_indexes")
    old.close()
    first = CliRunner().invoke(main, ["--db", str(db_path), "list"])
    assert first.exit_code == 0, first.output
    assert first.stderr.splitlines() == [
        f"upgrading {db_path} to this release's schema (013_reference_indexes, 014_activity_indexes,"
        " 015_label_activity): once, and a"
        " large database takes minutes"]
    again = CliRunner().invoke(main, ["--db", str(db_path), "list"])
    fresh = CliRunner().invoke(main, ["--db", str(db_path.with_name("new.db")), "list"])
    assert again.stderr == fresh.stderr == ""


def test_every_reference_is_looked_up_by_an_index(db):
    """Deleting a parent row makes SQLite look for its children: a column that references
    another row leads an index, or deleting one trajectory's labels scans every label, once a
    label (37 s for 42 labels among 4.2 million)."""
    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                       " AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%'")]
    unindexed = []
    for table in tables:
        leading = {db.execute(f"PRAGMA index_info('{index[1]}')").fetchone()[2]
                   for index in db.execute(f"PRAGMA index_list('{table}')").fetchall()}
        unindexed += [f"{table}.{fk[3]}" for fk in db.execute(f"PRAGMA foreign_key_list('{table}')").fetchall()
                      if fk[3] not in leading]
    assert unindexed == []
    for table, column in (("labels", "retracts"), ("label_state", "label_id")):
        plan = " ".join(r[3] for r in db.execute(f"EXPLAIN QUERY PLAN SELECT 1 FROM {table} WHERE {column} = 1"))
        assert "USING" in plan and "INDEX" in plan, plan


def test_spend_already_recorded_is_kept_when_payments_get_their_own_table(db_path):
    db = sqlite_utils.Database(sqlite3.connect(db_path))
    MIGRATIONS.apply(db, stop_before="011_request_spend")
    db.execute("INSERT INTO llm_requests (key, model, response, tokens_in, tokens_cached, tokens_out, cost_usd,"
               " run_id, created_at) VALUES ('k1', 'm', '{}', 1000, 200, 50, 0.25, 1, '2026-01-01')")
    db.conn.commit()
    db.close()
    db = open_db(db_path)
    spent = run_spend(db, 1)
    assert (spent.requests, spent.tokens_in, spent.tokens_cached, spent.tokens_out, spent.cost_usd) == (
        1, 1000, 200, 50, 0.25)

def test_wal_busy_timeout_and_foreign_keys(db):
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA busy_timeout").fetchone()[0] == int(BUSY_TIMEOUT_S * 1000)
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_open_db_errors(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        open_db(tmp_path)
    with pytest.raises(StoreError, match="does not exist"):
        open_db(tmp_path / "missing" / "x.db")
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open database"):
        open_db(bad)


def test_a_database_opened_to_read_is_never_written(tmp_path):
    """What the rules workers open: a file named with URI characters, read, never written."""
    path = tmp_path / "a?b#c%d.db"
    open_db(path).conn.close()
    reader = open_db_to_read(path)
    assert reader.execute("SELECT count(*) FROM trajectories").fetchone() == (0,)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.execute("DELETE FROM trajectories")
    with pytest.raises(StoreError, match="cannot be opened"):
        open_db_to_read(tmp_path / "missing.db")


def test_write_is_all_or_nothing(db):
    with pytest.raises(RuntimeError):
        with write(db):
            save_trajectory(db, _traj("a"))
            raise RuntimeError("boom")
    assert list_trajectories(db) == []


def test_a_second_writer_waits_for_the_first(db_path, db):
    other = sqlite3.connect(str(db_path), timeout=0.1)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            sqlite3.connect(str(db_path), timeout=0.05).execute("BEGIN IMMEDIATE")
    finally:
        other.rollback()
    save_trajectory(db, _traj())  # the lock is gone: the store writes


def test_data_version_changes_on_other_connections_commits_only(db_path, db):
    before = data_version(db)
    save_trajectory(db, _traj("own"))
    add_label(db, Label(trajectory_id="own", mode_id="FM-1.1", annotator="alice", verdict="present", onset_step=0))
    assert data_version(db) == before, "this connection's own writes are not news to it"
    other = open_db(db_path)
    try:
        assert data_version(db) == before, "opening (migrations already applied) writes nothing"
        other_before = data_version(other)
        add_label(other, Label(trajectory_id="own", mode_id="FM-1.2", annotator="bob", verdict="present", onset_step=0))
        after = data_version(db)
        assert after != before
        assert data_version(db) == after, "it stays put until the next commit elsewhere"
        assert data_version(other) == other_before, "nor is the other connection's own write to it"
    finally:
        other.close()


def test_save_is_idempotent_and_updates_changed_content(db):
    assert save_trajectory(db, _traj()) == "imported"
    assert save_trajectory(db, _traj()) == "unchanged"
    add_label(db, _label())
    assert save_trajectory(db, _traj(n=7)) == "updated"
    assert count_steps(db, "t1") == 7 and len(get_steps(db, "t1")) == 7
    assert [lab.mode_id for lab in current_labels(db, "t1")] == ["FM-1.1"]  # labels survive
    assert [h.index for h in search_steps(db, "needle")] == [3]  # the index follows the new steps


def test_lazy_step_paging(db):
    save_trajectory(db, _traj(n=1000))
    page = get_steps(db, "t1", 200, 50)
    assert [s.index for s in page] == list(range(200, 250))
    assert get_step(db, "t1", 999).content == "step number 999"
    previews = step_previews(db, "t1", 10, 3)
    assert [(p.index, p.agent, p.preview, p.length) for p in previews] == [
        (10, "agent0", "step number 10", 14), (11, "agent1", "step number 11", 14), (12, "agent0", "step number 12", 14)]
    with pytest.raises(NotFound):
        get_step(db, "t1", 1000)


def test_summary_listing_filters_and_ids(db):
    save_trajectory(db, _traj("aa11", system="AG2"))
    save_trajectory(db, _traj("aa22", system="MetaGPT", text="other"))
    assert [t.id for t in list_trajectories(db, TrajectoryFilter(system="MetaGPT"))] == ["aa22"]
    assert [t.id for t in list_trajectories(db, TrajectoryFilter(search="needle other"))] == ["aa22"]
    summary = get_summary(db, "aa11")
    assert (summary.n_steps, summary.agents) == (5, ["agent0", "agent1"])
    assert resolve_id(db, "aa1") == "aa11"
    with pytest.raises(NotFound, match="ambiguous"):
        resolve_id(db, "aa")
    with pytest.raises(NotFound):
        resolve_id(db, "zz")
    assert get_trajectory(db, "aa11", with_raw=True).raw == b"raw"
    assert get_trajectory(db, "aa11").raw is None


def test_full_text_search_is_safe_for_any_input(db):
    save_trajectory(db, _traj())
    assert [(h.trajectory_id, h.index) for h in search_steps(db, "NEEDLE")] == [("t1", 3)]
    assert "«needle»" in search_steps(db, "needle")[0].snippet
    for hostile in ('"', "AND OR NOT", "needle*", "col:needle", "(", ""):
        search_steps(db, hostile)  # no FTS syntax error leaks out


def test_labels_are_append_only_with_retraction(db):
    save_trajectory(db, _traj())
    first = add_label(db, _label(verdict="present"))
    second = add_label(db, _label(verdict="absent"))
    assert [lab.verdict for lab in current_labels(db, "t1")] == ["absent"]
    back = retract(db, second, "alice")
    assert back is not None and back.id == first
    assert [lab.verdict for lab in current_labels(db, "t1")] == ["present"]
    assert retract(db, first, "alice") is None
    assert current_labels(db, "t1") == []
    rows = history(db, "t1")
    assert [(r.verdict, r.retracts) for r in rows] == [("present", None), ("absent", None), (None, second),
                                                       (None, first)]
    with pytest.raises(ValueError, match="already retracted"):
        retract(db, first, "alice")
    with pytest.raises(ValueError, match="use retract"):
        add_labels(db, [_label().model_copy(update={"retracts": first})])


def test_cleared_tags_and_label_rows(db):
    save_trajectory(db, _traj())
    add_labels(db, [_label("FM-1.1"), _label("FM-2.2", verdict=None), _label("FM-3.1", annotator="bob")])
    assert [lab.mode_id for lab in current_labels(db, "t1", "alice")] == ["FM-1.1"]
    assert len(current_labels(db, "t1", "alice", include_cleared=True)) == 2
    assert sorted(label_rows(db)) == [("t1", "alice", "FM-1.1", "present", None), ("t1", "bob", "FM-3.1", "present", None)]
    assert annotators(db) == ["alice", "bob"]


def test_batch_labels_point_state_at_the_newest(db):
    save_trajectory(db, _traj())
    ids = add_labels(db, [_label(verdict="present"), _label(verdict="absent"), _label("FM-1.2")])
    assert ids == sorted(ids) and len(ids) == 3
    assert {(lab.mode_id, lab.verdict, lab.id) for lab in current_labels(db)} == {
        ("FM-1.1", "absent", ids[1]), ("FM-1.2", "present", ids[2])}
    assert add_labels(db, []) == []


def test_suggestion_decisions(db):
    save_trajectory(db, _traj())
    run = create_run(db, LabelRun(kind="llm", model="m"))
    [sid] = add_labels(db, [Label(trajectory_id="t1", mode_id="FM-2.3", annotator=run.annotator, verdict="present",
                                  provenance="llm", run_id=run.id)])
    suggestion = current_labels(db, "t1", run.annotator)[0]
    new_id = decide_suggestion(db, suggestion, "alice", "accepted")
    mine = current_labels(db, "t1", "alice")[0]
    assert (mine.id, mine.provenance, mine.run_id, mine.extra) == (new_id, "accepted", run.id, {"suggestion_label_id": sid})
    assert decide_suggestion(db, suggestion, "bob", "rejected") is None
    assert suggestion_decisions(db, "t1", "bob")[sid][0] == "rejected"


def test_review_state(db):
    save_trajectory(db, _traj())
    assert get_review(db, "t1", "alice").status == "not_started"
    set_review(db, "t1", "alice", "in_progress", add_seconds=10)
    state = set_review(db, "t1", "alice", "done", add_seconds=5.5)
    assert (state.status, state.seconds_spent) == ("done", 15.5)
    assert finished_by(db, "alice") == {"t1"}
    assert [r.annotator for r in review_states(db)] == ["alice"]
    assert [t.id for t in list_trajectories(db, TrajectoryFilter(review_status="done", annotator="alice"))] == ["t1"]
    assert list_trajectories(db, TrajectoryFilter(review_status="not_started", annotator="alice")) == []
    assert [t.id for t in list_trajectories(db, TrajectoryFilter(review_status="not_started", annotator="bob"))] == ["t1"]


def test_runs(db):
    run = create_run(db, LabelRun(kind="llm", model="gpt-4o", endpoint_host="127.0.0.1", params={"t": 0}))
    assert run.id == 1 and get_run(db, 1).status == "running"
    update_run(db, run.model_copy(update={"status": "completed", "counts": {"done": 3}, "tokens_in": 9}))
    stored = get_run(db, 1)
    assert (stored.status, stored.counts, stored.tokens_in, stored.params) == ("completed", {"done": 3}, 9, {"t": 0})
    assert [r.id for r in list_runs(db)] == [1]
    with pytest.raises(NotFound):
        get_run(db, 2)


def test_attributions_replace_per_annotator(db):
    save_trajectory(db, _traj())
    save_attribution(db, Attribution(trajectory_id="t1", annotator="who-and-when", step=2, agent="A"))
    save_attribution(db, Attribution(trajectory_id="t1", annotator="who-and-when", step=3, agent="B",
                                     warnings=["w"]))
    [att] = attributions(db, "t1")
    assert (att.step, att.agent, att.warnings) == (3, "B", ["w"])


def test_delete_trajectory_removes_everything(db):
    save_trajectory(db, _traj())
    add_label(db, _label())
    set_review(db, "t1", "alice", "done")
    save_attribution(db, Attribution(trajectory_id="t1", annotator="x"))
    delete_trajectory(db, "t1")
    assert list_trajectories(db) == [] and current_labels(db) == [] and attributions(db) == []
    assert search_steps(db, "needle") == []
