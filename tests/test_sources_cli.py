"""`mast sources` lists every label source; report and agreement without --source use or list them."""

from __future__ import annotations

import orjson
from click.testing import CliRunner
from tests.report_data import add_trajectory, label_all

from annotator.cli import main
from annotator.labelling.rules import DETECTORS


def _invoke(db_path, *args):
    return CliRunner().invoke(main, ["--db", str(db_path), *args], env={"COLUMNS": "100"})


def test_sources_lists_every_kind(db, db_path, sample_db):
    assert _invoke(db_path, "prelabel", "--labeller", "rules", "-q").exit_code == 0
    for tid in ("p1", "p2"):
        add_trajectory(db, tid)
        label_all(db, tid, "alice", {"FM-1.1"})
        label_all(db, tid, "bob", set())
    r = _invoke(db_path, "sources", "--json")
    assert r.exit_code == 0, r.output
    rows = {row["name"]: row for row in map(orjson.loads, r.stdout.splitlines())}
    assert {n: rows[n]["kind"] for n in rows} == {
        "alice": "person", "bob": "person", "consensus": "consensus", "mad-human-1": "imported-human",
        "mad-human-2": "imported-human", "mad-human-3": "imported-human", "run:1": "run"}
    assert rows["run:1"]["trajectories_finished"] == 13
    assert rows["run:1"]["modes_covered"] == sorted(DETECTORS)
    assert rows["alice"]["trajectories_finished"] == 2 and len(rows["alice"]["modes_covered"]) == 14
    assert rows["consensus"]["trajectories_finished"] == 2
    assert rows["mad-human-1"]["trajectories_finished"] == 4
    assert all(row["last_activity"] for row in rows.values())
    table = _invoke(db_path, "sources")
    assert table.exit_code == 0
    assert "4 of 14: FM-1.3, FM-1.5," in table.stdout and "imported human set" in table.stdout


def test_report_without_source_takes_the_only_one_or_lists_them(db, db_path):
    add_trajectory(db, "t1")
    label_all(db, "t1", "alice", {"FM-1.1"})
    one = _invoke(db_path, "report", "--format", "json", "--bootstrap", "0")
    assert one.exit_code == 0, one.output
    assert orjson.loads(one.stdout)["header"]["sources"][0]["name"] == "alice"
    assert "source: alice (the only label source)" in one.stderr
    label_all(db, "t1", "run-import", {"FM-1.2"}, provenance="llm", done=False)
    two = _invoke(db_path, "report")
    assert two.exit_code == 2
    assert "run-import" in two.stderr and "imported judge set" in two.stderr
    assert "name a label source with --source; there are 2" in two.stderr
    agreement = _invoke(db_path, "agreement")
    assert agreement.exit_code == 2 and "name two or more label sources" in agreement.stderr
    assert "alice" in agreement.stderr


def test_report_without_source_on_an_empty_database(db, db_path):
    r = _invoke(db_path, "report")
    assert r.exit_code == 2 and "no label sources yet" in r.stderr


def test_source_names_and_last_activity_come_from_every_label_and_review_state(db):
    """Read by index searches, the names and the newest write of each source are what reading
    every label and review state says: a source with review states and no label is named, and a
    review state newer than a source's labels is its last activity."""
    from annotator.store import report_tables
    from annotator.store.review import set_review

    for tid in ("t1", "t2", "t3"):
        add_trajectory(db, tid)
    label_all(db, "t1", "alice", {"FM-1.1"}, done=False)
    label_all(db, "t2", "bob", set())
    label_all(db, "t3", "run:7", {"FM-2.1"}, provenance="llm", done=False)
    set_review(db, "t1", "carol", "in_progress")
    set_review(db, "t3", "alice", "done")
    every = dict(db.execute(
        "SELECT annotator, max(t) FROM (SELECT annotator, max(created_at) AS t FROM labels GROUP BY annotator"
        " UNION ALL SELECT annotator, max(updated_at) FROM review_state GROUP BY annotator) GROUP BY annotator"))
    names = report_tables.source_names(db)
    assert names == sorted(every) == ["alice", "bob", "carol", "run:7"]
    assert report_tables.last_activity(db, [*names, "nobody"]) == every
    assert every["alice"] == db.execute("SELECT updated_at FROM review_state WHERE annotator = 'alice'").fetchone()[0]


def test_a_sources_last_label_is_kept_as_written_retractions_included_and_removals_leave_it(db):
    """``label_activity`` says when each source last wrote a label: raised by every label made
    current (an older imported time lowers nothing) and by a retraction, and left as it is when
    the trajectory its newest label was on is removed."""
    from datetime import datetime, timedelta, timezone

    from annotator.models import Label
    from annotator.store import report_tables
    from annotator.store.labels import add_labels, retract
    from annotator.store.trajectories import delete_trajectory

    for tid in ("t1", "t2"):
        add_trajectory(db, tid)
    late, early = (datetime(2026, 5, 1, tzinfo=timezone.utc) + timedelta(days=d) for d in (10, 0))
    ids = add_labels(db, [Label(trajectory_id="t1", mode_id="FM-1.1", annotator="alice", verdict="present",
                                provenance="human", created_at=late)])
    add_labels(db, [Label(trajectory_id="t2", mode_id="FM-1.1", annotator="alice", verdict="absent",
                          provenance="human", created_at=early)])
    assert report_tables.last_activity(db, ["alice"]) == {"alice": late.isoformat()}
    retract(db, ids[0], "alice")
    retracted = db.execute("SELECT created_at FROM labels WHERE retracts = ?", ids).fetchone()[0]
    assert report_tables.last_activity(db, ["alice"]) == {"alice": retracted} and retracted > late.isoformat()
    delete_trajectory(db, "t1")
    assert report_tables.last_activity(db, ["alice", "nobody"]) == {"alice": retracted}


def test_the_migration_takes_each_sources_last_label_from_published_trajectories(db_path):
    """A database of the release before ``label_activity`` gets each source's newest label time,
    passing over the labels of a trajectory an import was writing unseen, and loses the index
    that found it."""
    import sqlite3

    import sqlite_utils

    from annotator.store import open_db
    from annotator.store.schema import MIGRATIONS

    old = sqlite_utils.Database(sqlite3.connect(db_path))
    MIGRATIONS.apply(old, stop_before="015_label_activity")
    for tid, pending in (("t1", None), ("t2", None), ("t3", "host:1:abc")):
        old.execute("INSERT INTO trajectories (id, schema_version, source_format, content_hash, imported_at, pending)"
                    " VALUES (?, 1, 'test', ?, '2026-01-01T00:00:00', ?)", [tid, tid, pending])
    for tid, annotator, at in (("t1", "alice", "2026-03-01T00:00:00+00:00"), ("t2", "alice", "2026-02-01T00:00:00+00:00"),
                               ("t3", "alice", "2026-09-01T00:00:00+00:00"), ("t2", "run:1", "2026-04-01T00:00:00+00:00"),
                               ("t3", "bob", "2026-09-02T00:00:00+00:00")):
        old.execute("INSERT INTO labels (schema_version, trajectory_id, mode_id, annotator, verdict, provenance,"
                    " created_at) VALUES (1, ?, 'FM-1.1', ?, 'absent', 'human', ?)", [tid, annotator, at])
    old.conn.commit()
    old.close()
    db = open_db(db_path)
    assert dict(db.execute("SELECT annotator, written_at FROM label_activity")) == {
        "alice": "2026-03-01T00:00:00+00:00", "run:1": "2026-04-01T00:00:00+00:00"}
    assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'idx_labels_activity'").fetchone() is None
