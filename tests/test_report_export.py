"""Exports: the JSONL export imports back to the same labels and the same report; wide CSV and MAD JSON."""

from __future__ import annotations

import csv
import io

import orjson
import pytest
from tests.report_data import MODES, add_trajectory, known_prevalence_db, label_all

from annotator.errors import NotFound, ReportError
from annotator.importers.importing import import_paths
from annotator.models import Label
from annotator.report import export
from annotator.report.document import build_report
from annotator.store import open_db
from annotator.store.labels import add_labels, current_labels
from annotator.store.step_heads import get_step_head
from annotator.store.steps import PLACEHOLDER, get_step, get_steps, step_previews
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()
_FIELDS = ("trajectory_id", "annotator", "mode_id", "verdict", "onset_step", "evidence_steps", "quote", "note",
           "rationale", "confidence", "provenance", "grounded", "taxonomy_hash", "extra")


@pytest.fixture
def labelled(db):
    known_prevalence_db(db)
    add_labels(db, [Label(trajectory_id="f00", mode_id="FM-1.1", annotator="alice", verdict="present", onset_step=0,
                          evidence_steps=[2, 4], quote='rm -rf "/"', note="line one\nline two, with a comma",
                          confidence=0.75, extra={"why": ["a", 1]})])
    for i in range(4):
        label_all(db, f"f{i:02d}", "judge", {"FM-1.1": 1} if i % 2 else set(), provenance="imported", done=False,
                  unknown=("FM-2.2",) if i == 3 else ())
    return db


def _current(db, annotators=("alice", "judge")) -> list[tuple]:
    return sorted(tuple(getattr(lab, f) for f in _FIELDS) for lab in current_labels(db) if lab.annotator in annotators)


def test_jsonl_export_round_trip_restores_labels_and_report(labelled, tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(export.render(labelled, "jsonl", ["alice", "judge"], TAX), encoding="utf-8")
    rows = [orjson.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 30 * 14 + 4 * 14
    assert {r["source"] for r in rows} == {"alice", "judge"}
    fresh = open_db(tmp_path / "fresh.db")
    summary = import_paths(fresh, [path])
    assert not summary.failed and summary.files[0].format == "mast_export"
    assert summary.total("labels") == len(rows)
    assert _current(fresh) == _current(labelled)
    before = build_report(labelled, "alice", TAX, replicates=100, seed=4, row_limit=None)
    after = build_report(fresh, "alice", TAX, replicates=100, seed=4, row_limit=None)
    for name in ("prevalence", "failed_vs_successful", "two_by_two", "mean_modes", "onsets", "trajectories"):
        assert after.table(name).records == before.table(name).records, name
    again = import_paths(fresh, [path])  # a second import adds nothing
    assert again.total("labels") == 0 and again.total("unchanged") == 30
    into_source = import_paths(labelled, [path])  # nor does importing into the database it came from
    assert into_source.total("labels") == 0 and into_source.total("imported") == 0
    fresh.close()


def test_stub_shows_placeholder_steps_and_is_replaced_by_the_real_trajectory_keeping_its_labels(labelled, tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text(export.render(labelled, "jsonl", ["judge"], TAX), encoding="utf-8")
    fresh = open_db(tmp_path / "fresh.db")
    import_paths(fresh, [path])
    stub = fresh["trajectories"].get("f01")
    assert orjson.loads(stub["metadata"]) == {"label_export_stub": True} and stub["n_steps"] == 10
    # One placeholder per original step, none of them stored.
    assert fresh.execute("SELECT count(*) FROM steps").fetchone()[0] == 0
    steps = get_steps(fresh, "f01")
    assert [s.index for s in steps] == list(range(10)) and {s.content for s in steps} == {PLACEHOLDER}
    assert [s.index for s in get_steps(fresh, "f01", start=8, limit=5)] == [8, 9]
    assert [p.index for p in step_previews(fresh, "f01", 3, 4)] == [3, 4, 5, 6]
    assert get_step(fresh, "f01", 9).content == PLACEHOLDER
    assert get_step_head(fresh, "f01", 0)[1] == len(PLACEHOLDER)
    with pytest.raises(NotFound):
        get_step(fresh, "f01", 10)
    add_trajectory(fresh, "f01", steps=10)
    assert orjson.loads(fresh["trajectories"].get("f01")["metadata"]) == {}
    assert _current(fresh, ("judge",)) == _current(labelled, ("judge",))
    assert [s.content for s in get_steps(fresh, "f01")] == [f"step {i}" for i in range(10)]
    fresh.close()


def test_bad_line_fails_the_whole_export_file_naming_the_line(labelled, tmp_path):
    good = export.render(labelled, "jsonl", ["alice", "judge"], TAX)
    n = good.count("\n")
    last = orjson.loads(good.splitlines()[-1])
    for bad, reason in ((b"{not json", "malformed JSON line"),
                        (orjson.dumps({**last, "verdict": "maybe"}), "invalid verdict"),
                        (orjson.dumps({k: v for k, v in last.items() if k != "mode_id"}), "missing required key(s): mode_id"),
                        (orjson.dumps({**last, "format": "other"}), "not a mast label export row")):
        path = tmp_path / "labels.jsonl"
        path.write_bytes(good.encode() + bad + b"\n")
        fresh = open_db(tmp_path / "fresh.db")
        result = import_paths(fresh, [path]).files[0]
        assert result.error.startswith(f"{path}:line {n + 1}") and reason in result.error, result.error
        assert (result.imported, result.labels) == (0, 0)
        assert fresh.execute("SELECT (SELECT count(*) FROM trajectories) + (SELECT count(*) FROM labels)").fetchone() == (0,)
        fresh.close()


def test_trajectory_listed_twice_is_one_stub_and_its_later_rows_win(labelled, tmp_path):
    rows = [orjson.loads(line) for line in export.render(labelled, "jsonl", ["judge"], TAX).splitlines()]
    f01 = [r for r in rows if r["trajectory_id"] == "f01"]
    changed = {**f01[0], "verdict": "absent" if f01[0]["verdict"] == "present" else "present"}
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [*rows, *f01[1:], changed]))
    fresh = open_db(tmp_path / "fresh.db")
    result = import_paths(fresh, [path]).files[0]
    assert (result.imported, result.unchanged, result.labels) == (4, 1, len(rows) + 1)
    now = {lab.mode_id: lab.verdict for lab in current_labels(fresh, "f01", "judge")}
    assert now[changed["mode_id"]] == changed["verdict"]
    fresh.close()


def test_long_csv_has_one_row_per_verdict(labelled):
    rows = list(csv.DictReader(io.StringIO(export.render(labelled, "csv", ["alice"], TAX))))
    assert len(rows) == 30 * 14
    f00 = next(r for r in rows if r["trajectory_id"] == "f00" and r["mode_id"] == "FM-1.1")
    assert (f00["onset_step"], f00["evidence_steps"], f00["note"]) == ("0", "[2,4]", "line one\nline two, with a comma")
    assert (f00["system"], f00["outcome"], f00["n_steps"]) == ("S1", "failure", "10")


def test_wide_csv_and_mad_json(labelled):
    wide = list(csv.DictReader(io.StringIO(export.render(labelled, "wide-csv", ["judge"], TAX))))
    assert [r["trajectory_id"] for r in wide] == ["f00", "f01", "f02", "f03"]
    assert [r["FM-1.1"] for r in wide] == ["0", "1", "0", "1"]
    assert wide[3]["FM-2.2"] == ""  # undecided
    mad = orjson.loads(export.render(labelled, "mad-json", ["judge"], TAX))
    assert list(mad[1]["mast_annotation"]) == [m.removeprefix("FM-") for m in MODES]
    assert mad[1]["mast_annotation"]["1.1"] == 1 and mad[3]["mast_annotation"]["2.2"] is None
    assert (mad[0]["trace_id"], mad[0]["mas_name"], mad[0]["annotator"]) == ("f00", "S1", "judge")


def test_export_refuses_consensus(labelled):
    with pytest.raises(ReportError, match="consensus is computed"):
        export.render(labelled, "jsonl", ["consensus"], TAX)


def test_rows_as_export_writes_them_are_stored_as_the_field_by_field_check_stores_them(labelled):
    from annotator.importers.mast_export import _stored_label, _written, _written_label

    lines = export.render(labelled, "jsonl", ["alice", "judge"], TAX).encode().splitlines()
    assert lines and all(_written_label(_written(line)) == _stored_label(orjson.loads(line)) for line in lines)
    row = next(r for r in map(orjson.loads, lines) if r["evidence_steps"])  # the label with every field set
    # Other types or forms, and rows without every key, are left to the field-by-field check or the model:
    for other in ({**row, "confidence": True}, {**row, "grounded": 1}, {**row, "schema_version": True},
                  {k: v for k, v in row.items() if k != "quote"}, {**row, "created_at": "2026-13-01T00:00:00"},
                  {**row, "created_at": "2026-01-01 00:00:00"}, {**row, "evidence_steps": [1, "2"]},
                  {**row, "evidence_steps": [1, True]}, {**row, "onset_step": 1.0}, {**row, "confidence": 1.5},
                  {**row, "verdict": "maybe"}, {**row, "verdict": None}, {**row, "format": "other"},
                  {**row, "schema_version": 2}, {**row, "extra": []}, {**row, "n_steps": "12"}):
        assert _written(orjson.dumps(other)) is None, other
    for converted in ({**row, "confidence": 1}, {**row, "system": None}):  # the same value in the store's form
        assert _written_label(_written(orjson.dumps(converted))) == _stored_label(converted)
    assert _stored_label({**row, "confidence": 1})[10] == 1.0
    assert _written(b"{not json") is None and _written(b"\n") is None


def test_an_import_gives_the_objects_it_froze_back_to_the_collector_even_when_it_fails(labelled, tmp_path):
    import gc

    path = tmp_path / "labels.jsonl"
    good = export.render(labelled, "jsonl", ["judge"], TAX).encode()
    for content, ok in ((good, True), (good + b"{not json\n", False)):
        path.write_bytes(content)
        fresh = open_db(tmp_path / f"fresh-{ok}.db")
        assert import_paths(fresh, [path]).files[0].ok is ok
        assert gc.get_freeze_count() == 0
        fresh.close()


def _tables(db) -> dict[str, list[tuple]]:
    """Every row of every table the import writes, in a stable order (the time of import aside)."""
    out = {}
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'steps_fts%'"
                               " AND name NOT IN ('_sqlite_migrations', 'local_secrets')"):
        cols = [c for (_, c, *_) in db.execute(f"PRAGMA table_info({table})") if (table, c) != ("trajectories", "imported_at")]
        out[table] = db.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY {', '.join(cols)}").fetchall()
    return out


def test_rows_as_the_export_writes_them_write_the_same_tables_as_field_by_field_checks(labelled, tmp_path,
                                                                                        monkeypatch):
    from annotator.importers import mast_export

    rows = [orjson.loads(line) for line in export.render(labelled, "jsonl", ["alice", "judge"], TAX).splitlines()]
    odd = {**rows[40], "confidence": 1, "grounded": True, "onset_step": 3, "note": "é"}  # one row the model reads
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [*rows[:40], odd, *rows[41:]]) + b"\n")  # a blank line
    tables = {}
    for way in ("as written", "field by field"):
        if way == "field by field":
            monkeypatch.setattr(mast_export, "_written", lambda line: None)
        fresh = open_db(tmp_path / f"{way}.db")
        first, again = (import_paths(fresh, [path]).files[0] for _ in range(2))
        n = len({r["trajectory_id"] for r in rows})
        assert (first.imported, first.labels, again.unchanged, again.labels) == (n, len(rows), n, 0), way
        tables[way] = _tables(fresh)
        fresh.close()
    assert tables["as written"] == tables["field by field"]
    assert len(tables["as written"]["labels"]) == len(rows) and tables["as written"]["verdict_summary"]


def _exported(db, tmp_path, name="labels.jsonl", annotators=("judge",)):
    path = tmp_path / name
    path.write_text(export.render(db, "jsonl", list(annotators), TAX), encoding="utf-8")
    return path


def _removing_before_publish(monkeypatch, trajectory_id):
    """Another process removes a trajectory right before the import publishes."""
    from annotator.store import staging

    publish = staging.publish

    def removed_first(db, *args, **kwargs):
        db.execute("DELETE FROM trajectories WHERE id = ?", [trajectory_id])
        db.conn.commit()
        return publish(db, *args, **kwargs)

    monkeypatch.setattr(staging, "publish", removed_first)


def test_a_new_trajectory_removed_while_its_labels_were_read_fails_the_publish_whole(labelled, tmp_path, monkeypatch):
    """Its labels, written unseen, went with it: the file fails whole and says why."""
    path = _exported(labelled, tmp_path)
    fresh = open_db(tmp_path / "fresh.db")
    _removing_before_publish(monkeypatch, "f02")
    error = import_paths(fresh, [path]).files[0].error
    assert "a trajectory of this file was removed by another process" in error and "import this file again" in error
    assert fresh.execute("SELECT count(*) FROM labels").fetchone() == (0,)
    assert fresh.execute("SELECT count(*) FROM trajectories").fetchone() == (0,)
    fresh.close()


def test_a_visible_trajectory_removed_while_its_labels_were_read_fails_the_publish_whole(labelled, tmp_path,
                                                                                          monkeypatch):
    """Labels for a trajectory already there wait until publishing, which the missing trajectory fails."""
    from annotator.errors import StoreError

    fresh = open_db(tmp_path / "fresh.db")
    assert not import_paths(fresh, [_exported(labelled, tmp_path)]).failed
    before = fresh.execute("SELECT count(*) FROM labels").fetchone()
    label_all(labelled, "f02", "judge", {"FM-1.2": 1}, provenance="imported", done=False)  # a changed verdict
    path = _exported(labelled, tmp_path, "changed.jsonl")
    _removing_before_publish(monkeypatch, "f02")
    with pytest.raises(StoreError, match="FOREIGN KEY constraint failed"):
        import_paths(fresh, [path])
    assert fresh.execute("SELECT count(*) FROM labels WHERE trajectory_id != 'f02'").fetchone() <= before
    assert fresh.execute("SELECT count(*) FROM trajectories WHERE pending IS NOT NULL").fetchone() == (0,)
    fresh.close()


def test_labels_written_before_publishing_are_seen_by_no_reader(labelled, tmp_path, monkeypatch):
    """Until the import publishes, no current label, summary, annotator or listing shows them."""
    from annotator.store import staging
    from annotator.store.labels import annotators
    from annotator.store.report_tables import last_activity
    from annotator.store.trajectories import list_trajectories

    path = _exported(labelled, tmp_path, annotators=("alice", "judge"))
    fresh = open_db(tmp_path / "fresh.db")
    publish, seen = staging.publish, {}

    def looked_first(db, *args, **kwargs):
        seen["written"] = db.execute("SELECT count(*) FROM labels").fetchone()[0]
        seen["current"] = len(current_labels(db))
        seen["summary"] = db.execute("SELECT count(*) FROM verdict_summary").fetchone()[0]
        seen["annotators"], seen["listed"] = annotators(db), len(list_trajectories(db))
        seen["active"] = last_activity(db, ["alice", "judge"])
        return publish(db, *args, **kwargs)

    monkeypatch.setattr(staging, "publish", looked_first)
    result = import_paths(fresh, [path]).files[0]
    assert not result.error and result.labels == seen["written"] > 0
    assert (seen["current"], seen["summary"], seen["annotators"], seen["listed"], seen["active"]) == (0, 0, [], 0, {})
    assert set(last_activity(fresh, ["alice", "judge"])) == {"alice", "judge"}
    assert _current(fresh) == _current(labelled)
    fresh.close()

def test_a_label_import_killed_midway_leaves_no_label_behind(labelled, tmp_path):
    """The labels written unseen go when the next import discards the killed one's trajectories."""
    import sqlite3
    import subprocess

    from tests.test_concurrent_writes import MAST, kill_midway

    template = orjson.loads(_exported(labelled, tmp_path).read_text().splitlines()[0])
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:
        for i in range(5_000):
            for mode in MODES:
                fh.write(orjson.dumps({**template, "trajectory_id": f"k{i:05d}", "mode_id": mode}) + b"\n")
    db_path = tmp_path / "killed.db"
    open_db(db_path).close()
    proc = subprocess.Popen([str(MAST), "--db", str(db_path), "import", "-q", str(big)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    watcher = sqlite3.connect(db_path)
    kill_midway(proc, watcher, "SELECT count(*) FROM labels", 1000, "the import writes labels unseen")
    db = open_db(db_path)
    assert current_labels(db) == [] and db.execute("SELECT count(*) FROM verdict_summary").fetchone() == (0,)
    assert not import_paths(db, [_exported(labelled, tmp_path, "small.jsonl")]).failed
    assert watcher.execute("SELECT count(*) FROM labels WHERE trajectory_id LIKE 'k%'").fetchone() == (0,)
    assert watcher.execute("SELECT count(*) FROM trajectories WHERE pending IS NOT NULL").fetchone() == (0,)
    assert watcher.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    watcher.close()
    db.close()
