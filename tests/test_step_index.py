"""The full-text rows of an import's steps, written at each commit (``store.step_index``), index
exactly the steps stored: after records that replace one another in one transaction, a streamed
trajectory, a re-import that changes them, and a file that fails part-way."""

from __future__ import annotations

import orjson
import pytest

from annotator.importers import reading
from annotator.importers.importing import import_paths
from annotator.store.search import search_steps
from annotator.store.step_index import IndexedBatches
from annotator.store.trajectories import STEP_CHUNK


def _index_is_exact(db) -> None:
    """FTS5's own check of an external-content index against its table (raises if they differ)."""
    db.execute("INSERT INTO steps_fts(steps_fts, rank) VALUES ('integrity-check', 1)")


def _chats(path, words: list[str], steps: int = 3, bad_last_line: bool = False):
    """JSON Lines: for each word, records c0..c2 (ids given again by later words: the later wins)."""
    with path.open("wb") as fh:
        for word in words:
            for i in range(3):
                fh.write(orjson.dumps({"id": f"c{i}", "messages": [
                    {"role": "user" if k % 2 == 0 else "assistant", "content": f"{word}{i} step {k}"}
                    for k in range(steps)]}) + b"\n")
        if bad_last_line:
            fh.write(b"{not json\n")
    return path


def test_records_replaced_in_the_same_transaction_leave_the_later_indexed(db, tmp_path):
    summary = import_paths(db, [_chats(tmp_path / "a.jsonl", ["draft", "zebra", "final"])])
    assert not summary.failed and summary.total("imported") == 3
    _index_is_exact(db)
    assert search_steps(db, "final1") and not search_steps(db, "draft1") and not search_steps(db, "zebra1")


def test_a_changed_reimport_and_a_failed_file_keep_the_index_exact(db, tmp_path):
    path = _chats(tmp_path / "a.jsonl", ["old"], steps=STEP_CHUNK + 5)
    assert not import_paths(db, [path]).failed
    _chats(path, ["new", "newer"], steps=STEP_CHUNK + 7)
    summary = import_paths(db, [path])
    assert summary.total("updated") == 3
    _index_is_exact(db)
    assert search_steps(db, "newer2") and not search_steps(db, "old2") and not search_steps(db, "new2")
    failed = import_paths(db, [_chats(tmp_path / "b.jsonl", ["broken"], bad_last_line=True)])
    assert failed.failed
    _index_is_exact(db)
    assert not search_steps(db, "broken0")


def test_a_streamed_trajectory_is_indexed(db, tmp_path, monkeypatch):
    monkeypatch.setattr(reading, "WHOLE_JSON_BYTES", 0)
    path = tmp_path / "chat.json"
    for word in ("first", "second"):
        path.write_bytes(orjson.dumps({"id": "long", "messages": [
            {"role": "user", "content": f"{word} {k}"} for k in range(3 * STEP_CHUNK + 1)]}))
        assert not import_paths(db, [path]).failed
        _index_is_exact(db)
        assert len(search_steps(db, word, limit=10_000)) == 3 * STEP_CHUNK + 1


def test_steps_written_are_indexed_at_each_commit_and_not_before(db):
    with IndexedBatches(db) as batches:
        db.execute("INSERT INTO trajectories (id, schema_version, source_format, content_hash, imported_at)"
                   " VALUES ('t', 1, 'test', 'h', '2026-01-01')")
        from annotator.models import Step
        from annotator.store.trajectories import write_steps

        write_steps(db, "t", [Step(index=0, content="quokka")], batches)
        assert db.execute("SELECT count(*) FROM steps_fts WHERE steps_fts MATCH 'quokka'").fetchone()[0] == 0
        batches.commit()
        assert db.execute("SELECT count(*) FROM steps_fts WHERE steps_fts MATCH 'quokka'").fetchone()[0] == 1
    _index_is_exact(db)


@pytest.mark.parametrize("fail", [False, True])
def test_a_rolled_back_transaction_leaves_nothing_to_index(db, fail):
    from annotator.models import Step
    from annotator.store.trajectories import write_steps

    db.execute("INSERT INTO trajectories (id, schema_version, source_format, content_hash, imported_at)"
               " VALUES ('t', 1, 'test', 'h', '2026-01-01')")
    db.conn.commit()
    with pytest.raises(RuntimeError), IndexedBatches(db) as batches:
        write_steps(db, "t", [Step(index=0, content="wombat")], batches)
        raise RuntimeError("the file is bad")
    assert db.execute("SELECT count(*) FROM steps").fetchone()[0] == 0
    _index_is_exact(db)
