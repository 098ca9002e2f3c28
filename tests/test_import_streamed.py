"""A chat too big to hold is streamed into the store: the same trajectory as a whole import
(steps, links, task, metadata that follows the messages, raw bytes, accounting), re-imports as
unchanged or updated, and a failure part-way leaves nothing behind, visible or not.
(Its peak memory is measured in benchmarks/bench_import_limits.py.)"""

from __future__ import annotations

import orjson
import pytest

from annotator.importers import reading
from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file
from annotator.store.db import open_db
from annotator.store.trajectories import STEP_CHUNK, get_trajectory


def _chat(n_calls: int, answer: str = "done") -> dict:
    """A chat whose calls and results straddle step chunks, an unnamed call, an orphan result,
    and members after the messages (an id, a model, a title)."""
    messages = [{"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "Fix the test."}]
    for k in range(n_calls):
        messages.append({"role": "assistant", "content": f"step {k}", "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": f'{{"n": {k}}}'}}]})
        if k % 7:  # results come late: a chunk may separate a call from its result
            messages.append({"role": "tool", "tool_call_id": f"c{k - 1 if k % 3 == 0 else k}", "content": f"out {k}"})
    messages.append({"role": "assistant", "tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]})
    messages.append({"role": "tool", "tool_call_id": "nobody", "content": "orphan"})
    messages.append({"role": "assistant", "content": answer})
    return {"messages": messages, "id": "run-1", "model": "gpt-4o", "title": "a long run"}


def _import(db, path, streamed: bool, monkeypatch, **opts):
    monkeypatch.setattr(reading, "WHOLE_JSON_BYTES", 0 if streamed else 1 << 40)
    return import_file(db, path, opts=ImportOptions(**opts))


def _stored(db, tid):
    traj = get_trajectory(db, tid, with_raw=True)
    steps = [s.model_dump(exclude={"raw"}) for s in traj.steps]
    return traj, steps


@pytest.fixture
def chat_file(tmp_path):
    path = tmp_path / "chat.json"
    path.write_bytes(orjson.dumps(_chat(3 * STEP_CHUNK)))
    return path


def test_a_streamed_chat_is_the_trajectory_a_whole_import_makes(tmp_path, chat_file, monkeypatch):
    whole_db, stream_db = open_db(tmp_path / "whole.db"), open_db(tmp_path / "stream.db")
    whole = _import(whole_db, chat_file, False, monkeypatch)
    stream = _import(stream_db, chat_file, True, monkeypatch)
    assert whole.ok and stream.ok and stream.imported == 1
    assert stream.trajectory_ids == whole.trajectory_ids
    assert stream.ledger.as_dict() == whole.ledger.as_dict()
    assert {k for k, _ in stream.ledger.warnings} == {"tool_call_unnamed", "result_unlinked"}
    (w, w_steps), (s, s_steps) = (_stored(d, whole.trajectory_ids[0]) for d in (whole_db, stream_db))
    assert s_steps == w_steps
    assert any(st["link"] is not None and st["kind"] == "tool_call" for st in s_steps)
    assert s.raw == chat_file.read_bytes()
    for field in ("task", "model", "title", "metadata", "source_format"):
        assert getattr(s, field) == getattr(w, field)
    assert s.model == "gpt-4o" and s.metadata["id"] == "run-1"
    assert stream_db.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 1
    hits = stream_db.execute("SELECT count(*) FROM steps_fts WHERE steps_fts MATCH 'orphan'").fetchone()[0]
    assert hits == 1


def test_a_streamed_chat_reimports_unchanged_then_updated(db, chat_file, monkeypatch):
    assert _import(db, chat_file, True, monkeypatch).imported == 1
    again = _import(db, chat_file, True, monkeypatch)
    assert again.unchanged == 1 and not again.ledger.read
    chat_file.write_bytes(orjson.dumps(_chat(3 * STEP_CHUNK, answer="changed")))
    changed = _import(db, chat_file, True, monkeypatch)
    assert changed.updated == 1
    traj, _ = _stored(db, changed.trajectory_ids[0])
    assert traj.steps[-1].content == "changed" and traj.raw == chat_file.read_bytes()
    assert db.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM steps").fetchone()[0] == len(traj.steps)


def test_a_streamed_chat_that_breaks_late_leaves_nothing(db, chat_file, monkeypatch):
    data = chat_file.read_bytes()
    chat_file.write_bytes(data[: len(data) - 40])
    result = _import(db, chat_file, True, monkeypatch)
    assert not result.ok and "malformed JSON" in result.error and result.imported == 0
    for table in ("trajectories", "steps", "imports", "step_heads"):
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0


def test_strict_refuses_a_streamed_chat_with_warnings(db, chat_file, monkeypatch):
    result = _import(db, chat_file, True, monkeypatch, strict=True)
    assert not result.ok and "--strict: tool_call_unnamed" in result.error
    assert db.execute("SELECT count(*) FROM trajectories").fetchone()[0] == 0


def test_a_streamed_bare_list_of_messages(db, tmp_path, monkeypatch):
    path = tmp_path / "list.json"
    path.write_bytes(orjson.dumps(_chat(5)["messages"]))
    result = _import(db, path, True, monkeypatch)
    assert result.imported == 1
    traj, _ = _stored(db, result.trajectory_ids[0])
    assert traj.task == "Fix the test." and traj.raw == path.read_bytes()
