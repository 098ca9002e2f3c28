"""Nobody waits for an import: readers take no lock, writers wait a fraction of a second.

The attack: during a 38 s import of one 122 MB file a tag froze for 30 s and was refused, and
`mast list` next to an open write transaction failed the same way. Here the busy timeout is cut
to well under what a file takes to import, so any reader that took the write lock, and any
writer that had to wait for a whole file, fails the test.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from annotator.annotating.session import AnnotationSession
from annotator.cli import main
from annotator.importers.importing import import_paths
from annotator.store import db as store_db
from annotator.store import open_db
from annotator.store.search import search_steps
from annotator.store.trajectories import list_trajectories
from annotator.taxonomy import load_taxonomy

ROOT = Path(__file__).resolve().parents[1]
MAST = Path(sys.executable).with_name("mast")
WORDS = "the planner asks the coder to verify the output before the tester runs again".split()


def corpus(path: Path, n: int, steps: int = 120, tag: str = "c", bad_last_line: bool = False) -> Path:
    """A JSON Lines file of ``n`` generated trajectories (about 60 kB each at 120 steps)."""
    with path.open("wb") as fh:
        for i in range(n):
            messages = [{"role": "user" if k % 2 == 0 else "assistant",
                         "content": f"{tag}{i} step {k} " + " ".join(WORDS[(i + k + j) % len(WORDS)] for j in range(60))}
                        for k in range(steps)]
            fh.write(orjson.dumps({"id": f"{tag}{i}", "system": "Soak", "messages": messages}) + b"\n")
        if bad_last_line:
            fh.write(b"{not json\n")
    return path


@pytest.fixture
def seeded(db_path):
    db = open_db(db_path)
    summary = import_paths(db, [ROOT / "trajectories"])
    assert not summary.failed
    yield db
    db.close()


@pytest.fixture
def locked(db_path, seeded, monkeypatch):
    """Another process's write transaction, open for the whole test; writers give up after 0.2 s."""
    monkeypatch.setattr(store_db, "BUSY_TIMEOUT_S", 0.2)
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE trajectories SET title = 'uncommitted' WHERE id = (SELECT min(id) FROM trajectories)")
    yield
    other.rollback()
    other.close()


@pytest.mark.parametrize("args", [["list"], ["list", "--json"], ["report", "-s", "mad-human-1", "--bootstrap", "0"],
                                  ["agreement", "-s", "mad-human-1,mad-human-2", "--bootstrap", "0"],
                                  ["export", "-s", "mad-human-1"]])
def test_read_only_commands_never_wait_for_a_writer(db_path, locked, args):
    result = CliRunner().invoke(main, ["--db", str(db_path), *args])
    assert result.exit_code == 0, result.output
    assert "uncommitted" not in result.output


def test_opening_a_current_database_takes_no_lock(db_path, locked):
    db = open_db(db_path)
    assert len(list_trajectories(db)) == 13
    db.close()


def _import(path: Path, db_path: Path) -> subprocess.Popen:
    return subprocess.Popen([str(MAST), "--db", str(db_path), "import", "-q", "--format", "jsonl", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_tags_are_not_refused_while_a_large_file_imports(db_path, seeded, tmp_path, monkeypatch):
    """A writer gives up after 1 s here: one transaction per file would refuse every tag made
    while the file imports; short transactions let each in. The file appears whole or not at all."""
    monkeypatch.setattr(store_db, "BUSY_TIMEOUT_S", 1.0)
    big = corpus(tmp_path / "big.jsonl", 250)
    tax = load_taxonomy()
    ids = [t.id for t in list_trajectories(seeded)]
    proc = _import(big, db_path)
    writes, seen, i = 0, set(), 0
    while proc.poll() is None:
        session = AnnotationSession(seeded, ids[i % len(ids)], "alice", tax)
        session.toggle(tax.mode_ids[i % len(tax.mode_ids)], 0)  # raises StoreError if refused
        writes += 1
        seen.add(len(list_trajectories(seeded)))
        i += 1
        time.sleep(0.01)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    assert "250 imported" in out
    assert writes >= 10, "tags were made while the file imported"
    assert seen <= {13, 263}, "never part of the file"
    assert len(list_trajectories(seeded)) == 263


def test_a_file_that_fails_leaves_nothing_staged(db_path, seeded, tmp_path):
    bad = corpus(tmp_path / "bad.jsonl", 40, bad_last_line=True)
    summary = import_paths(seeded, [bad])
    assert summary.failed and "bad.jsonl" in summary.failed[0].error
    assert len(list_trajectories(seeded)) == 13
    for table in ("imports", "pending_labels"):
        assert seeded.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    assert seeded.execute("SELECT count(*) FROM trajectories WHERE pending IS NOT NULL").fetchone()[0] == 0
    assert search_steps(seeded, "c39 step 7") == []


def kill_midway(proc: subprocess.Popen, watcher: sqlite3.Connection, count: str, at_least: int, doing: str) -> None:
    """SIGKILL ``proc`` once the query ``count`` counts ``at_least`` (which it must do while it
    runs, within a minute: ``doing`` says what it is then)."""
    deadline = time.monotonic() + 60
    while watcher.execute(count).fetchone()[0] < at_least:
        assert time.monotonic() < deadline and proc.poll() is None, doing
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_an_import_killed_midway_shows_nothing_and_is_cleaned_up(db_path, seeded, tmp_path):
    big = corpus(tmp_path / "big.jsonl", 400)
    proc = _import(big, db_path)
    watcher = sqlite3.connect(db_path)
    kill_midway(proc, watcher, "SELECT count(*) FROM trajectories WHERE pending IS NOT NULL", 5,
                "the import stages trajectories")
    # In a container the next process may get the dead one's pid (pid 1): a live pid on the same
    # host must not keep the abandoned import's rows forever.
    watcher.execute("UPDATE imports SET pid = ?, host = ?", [os.getpid(), socket.gethostname()])
    watcher.commit()
    assert len(list_trajectories(seeded)) == 13, "a killed import shows nothing"
    assert search_steps(seeded, "c1 step 3") == []
    small = corpus(tmp_path / "small.jsonl", 2, tag="s")
    assert not import_paths(seeded, [small]).failed
    assert watcher.execute("SELECT count(*) FROM trajectories WHERE pending IS NOT NULL").fetchone()[0] == 0
    assert watcher.execute("SELECT count(*) FROM imports").fetchone()[0] == 0
    assert watcher.execute("SELECT count(*) FROM steps WHERE trajectory_id NOT IN (SELECT id FROM trajectories)"
                           ).fetchone()[0] == 0
    assert watcher.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    watcher.close()
    assert len(list_trajectories(seeded)) == 15
    assert not list(db_path.parent.glob(f"{db_path.name}-import-*")), "no lease file is left behind"


def test_a_changed_trajectory_is_swapped_at_publication(db_path, seeded, tmp_path):
    first = corpus(tmp_path / "v.jsonl", 3, steps=4, tag="old")
    assert not import_paths(seeded, [first]).failed
    target = next(t for t in list_trajectories(seeded) if t.system == "Soak")
    AnnotationSession(seeded, target.id, "alice", load_taxonomy()).toggle("FM-1.1", 2)
    with first.open("wb") as fh:  # the same records (same ids), new contents, each twice: the later wins
        for word in ("draft", "renewed"):
            for i in range(3):
                fh.write(orjson.dumps({"id": f"old{i}", "system": "Soak", "messages": [
                    {"role": "user", "content": f"{word} {i} zebra"}, {"role": "assistant", "content": "ok"}]}) + b"\n")
    summary = import_paths(seeded, [first])
    assert not summary.failed and summary.total("updated") == 3, "each trajectory once, as its later record"
    assert len(summary.files[0].trajectory_ids) == len(set(summary.files[0].trajectory_ids)) == 3
    assert any(kind == "duplicate_id" for kind, _ in summary.files[0].ledger.warnings)
    assert not search_steps(seeded, "draft zebra")
    again = next(t for t in list_trajectories(seeded) if t.id == target.id)
    assert again.n_steps == 2
    assert search_steps(seeded, "renewed zebra", target.id) and not search_steps(seeded, "old0 step", target.id)
    session = AnnotationSession(seeded, target.id, "alice", load_taxonomy())
    assert session.labels()["FM-1.1"].onset_step == 2, "labels stay with the trajectory"
    assert seeded.execute("SELECT count(*) FROM trajectories WHERE pending IS NOT NULL").fetchone()[0] == 0


def test_a_replaced_version_gives_its_steps_ids_of_the_real_trajectory(seeded):
    """Steps without an id of their own are named after their trajectory: a new version staged
    under a shadow row must not publish steps named after that row."""
    from annotator.models import Step, Trajectory
    from annotator.store import staging
    from annotator.store.step_index import IndexedBatches

    def version(word: str) -> Trajectory:
        return Trajectory(id="plain", source_format="openai_chat", content_hash=word,
                          steps=[Step(index=i, kind="message", role="user", content=f"{word} {i}") for i in range(3)])

    for word in ("first", "second"):
        token = staging.start(seeded, "test")
        with IndexedBatches(seeded) as batches:
            _, shadow = staging.stage_trajectory(seeded, version(word), token, batches)
        staging.publish(seeded, token, [(shadow, "plain")] if shadow else [], [])
    rows = seeded.execute("SELECT id, content FROM steps WHERE trajectory_id = 'plain' ORDER BY idx").fetchall()
    assert rows == [("plain:0", "second 0"), ("plain:1", "second 1"), ("plain:2", "second 2")]


def test_a_trajectory_given_twice_keeps_only_the_later_records_labels(seeded):
    """The earlier record's labels, written unseen with its trajectory, are withdrawn with it."""
    from annotator.importers.base import ImportedRecord
    from annotator.importers.importing import FileResult, _Staged
    from annotator.models import Label, Step, Trajectory
    from annotator.store import staging
    from annotator.store.labels import current_labels
    from annotator.store.step_index import IndexedBatches

    def record(word: str, verdicts: dict[str, str]) -> ImportedRecord:
        traj = Trajectory(id="twice", source_format="openai_chat", content_hash=word,
                          steps=[Step(index=0, kind="message", role="user", content=word)])
        return ImportedRecord(trajectory=traj, labels=[
            Label(trajectory_id="twice", mode_id=m, annotator="gold", verdict=v, provenance="imported")
            for m, v in verdicts.items()])

    result = FileResult(path="twice.jsonl")
    token = staging.start(seeded, "test")
    staged = _Staged(seeded, token, result)
    with IndexedBatches(seeded) as batches:
        staged.write([record("first", {"FM-1.1": "present", "FM-2.2": "present"})], batches)
        staged.write([record("second", {"FM-1.1": "absent", "FM-3.3": "present"})], batches)
    staging.publish(seeded, token, list(staged.replaced.items()), staged.attributions)
    assert (result.imported, result.labels) == (1, 2)
    assert {lab.mode_id: lab.verdict for lab in current_labels(seeded) if lab.trajectory_id == "twice"} == {
        "FM-1.1": "absent", "FM-3.3": "present"}
    assert seeded.execute("SELECT count(*) FROM labels WHERE trajectory_id = 'twice'").fetchone() == (2,)
