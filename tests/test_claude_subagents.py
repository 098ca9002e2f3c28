"""Claude Code sub-agent transcripts (``<sessionId>/subagents/agent-<id>.jsonl``): folded into
their session under the Task call that launched them, in time order, never imported twice, and
part of the session's content hash. Fixture: tests/fixtures/claude_code_subagents/SOURCES.md."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file, import_paths
from annotator.importers.registry import registry
from annotator.store.trajectories import get_trajectory, list_trajectories

FIXTURE = Path(__file__).parent / "fixtures" / "claude_code_subagents"
SID = "5b0c3a7e-8d1f-4c2a-9e6b-2f4d8a1c7e90"
A, B = "a3f9c2e41b7d06a58", "a7e1d94c20b5f3e6d"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A writable copy of the fixture project folder."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "project"))


def _read(path: Path):
    [rec] = registry()["claude_code"].read(path, ImportOptions())
    return rec


def test_subagents_fold_under_their_task_calls_in_time_order():
    rec = _read(FIXTURE / f"{SID}.jsonl")
    traj = rec.trajectory
    steps = traj.steps
    assert len(steps) == 17 and [s.index for s in steps] == list(range(17))
    assert traj.metadata["agents"] == ["claude", f"subagent {A}", f"subagent {B}"]
    task_a, task_b = (s for s in steps if s.tool_name == "Task" and s.kind == "tool_call")
    assert (task_a.call_id, task_b.call_id) == ("toolu_01TaskA", "toolu_01TaskB")
    for task, agent, n in ((task_a, A, 6), (task_b, B, 4)):
        sub = [s for s in steps if s.id.startswith(f"agent-{agent} ")]
        assert len(sub) == n and all(s.parent == task.index and s.group == "sidechain" for s in sub)
        assert task.index < sub[0].index and sub[-1].index < task.link  # between the call and its result
        assert steps[task.link].kind == "tool_result"
    stamps = [s.timestamp for s in steps]
    assert stamps == sorted(stamps)  # the two sub-agents ran side by side: interleaved by time
    assert [s.agent for s in steps[4:9]] == ["claude", "claude", f"subagent {A}", "environment", f"subagent {B}"]
    # each sub-agent's prompt is the main agent's message to it
    assert steps[4].recipient == f"subagent {A}" and steps[4].content.startswith("Find where the HTTP client's")
    # tool calls inside the sub-agents are paired with their results
    for call in (s for s in steps if s.kind == "tool_call"):
        assert steps[call.link].call_id == call.call_id
    assert sum(1 for s in steps if s.kind == "tool_call") == 5
    # the progress line repeating sub-agent B is not a step, the compaction file is not folded in
    assert not any(s.kind == "event" for s in steps)
    assert rec.warnings == ["agent-acompact-5d21e0.jsonl: context-compaction transcript, not folded in"]
    subs = {d["agent_id"]: d for d in traj.metadata["subagents"] if d["folded"]}
    assert subs[A]["call_id"] == "toolu_01TaskA" and subs[B]["model"] == "claude-opus-4-5-20251101"
    assert traj.task == "Where is the retry limit set, and do the tests cover it?"


def test_walk_imports_one_trajectory_and_skips_the_subagent_files(db, project):
    summary = import_paths(db, [project])
    by_name = {Path(f.path).name: f for f in summary.files}
    assert by_name[f"{SID}.jsonl"].imported == 1
    session = project / f"{SID}.jsonl"
    for name in (f"agent-{A}.jsonl", f"agent-{B}.jsonl"):
        assert by_name[name].skipped == f"sub-agent transcript, imported with its session {session}"
        assert by_name[name].imported == 0
    assert by_name["agent-acompact-5d21e0.jsonl"].skipped == (
        f"context-compaction transcript of the session {session}, left out")
    assert len(list_trajectories(db)) == 1
    # named explicitly while the session is there: still not a second trajectory
    again = import_file(db, project / SID / "subagents" / f"agent-{A}.jsonl")
    assert again.skipped and again.imported == 0 and len(list_trajectories(db)) == 1


def test_reimport_is_idempotent_and_sees_subagent_changes(db, project):
    session = project / f"{SID}.jsonl"
    first = import_file(db, session)
    assert (first.imported, import_file(db, session).unchanged) == (1, 1)
    sub = project / SID / "subagents" / f"agent-{B}.jsonl"
    lines = sub.read_bytes().splitlines()
    last = orjson.loads(lines[-1])
    last["message"]["content"][0]["text"] = "All retry tests pass."
    sub.write_bytes(b"\n".join([*lines[:-1], orjson.dumps(last)]) + b"\n")
    changed = import_file(db, session)
    assert changed.updated == 1 and changed.trajectory_ids == first.trajectory_ids
    steps = get_trajectory(db, first.trajectory_ids[0]).steps
    assert any(s.content == "All retry tests pass." and s.agent == f"subagent {B}" for s in steps)


def test_orphan_subagent_file_imports_alone_only_when_named(db, project):
    (project / f"{SID}.jsonl").unlink()
    orphan = project / SID / "subagents" / f"agent-{A}.jsonl"
    walked = import_paths(db, [project / SID])
    assert all(f.skipped and "is absent" in f.skipped for f in walked.files) and list_trajectories(db) == []
    named = import_file(db, orphan)
    assert named.imported == 1
    traj = get_trajectory(db, named.trajectory_ids[0])
    assert traj.title == f"claude sub-agent {A} of session {SID}"
    assert len(traj.steps) == 6 and {s.agent for s in traj.steps} == {"user", "environment", f"subagent {A}"}


def _rewrite(path: Path, change) -> None:
    rows = [orjson.loads(ln) for ln in path.read_bytes().splitlines() if ln.strip()]
    rows = [r for r in (change(r) for r in rows) if r is not None]
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))


def test_launching_call_found_from_result_text_or_prompt(project):
    """Without toolUseResult or progress lines: sub-agent A by the ``agentId:`` line of the
    result text, sub-agent B by its prompt."""
    def strip(rec):
        if rec.get("type") == "progress":
            return None
        rec.pop("toolUseResult", None)
        content = rec.get("message", {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("tool_use_id") == "toolu_01TaskA":
                block["content"] = [{"type": "text", "text": "Done.\nagentId: " + A + " (for resuming)"}]
        return rec
    session = project / f"{SID}.jsonl"
    _rewrite(session, strip)
    traj = _read(session).trajectory
    calls = {s.call_id: s.index for s in traj.steps if s.tool_name == "Task" and s.kind == "tool_call"}
    parents = {s.agent: s.parent for s in traj.steps if s.agent.startswith("subagent")}
    assert parents == {f"subagent {A}": calls["toolu_01TaskA"], f"subagent {B}": calls["toolu_01TaskB"]}


def test_progress_lines_stay_when_the_subagent_file_is_missing(project):
    (project / SID / "subagents" / f"agent-{B}.jsonl").unlink()
    rec = _read(project / f"{SID}.jsonl")
    assert [s.attributes["unknown_type"] for s in rec.trajectory.steps if s.kind == "event"] == ["progress"]
    assert "unknown event of type 'progress' kept as a generic step" in rec.warnings


def test_bad_line_in_a_subagent_file(db, project):
    sub = project / SID / "subagents" / f"agent-{A}.jsonl"
    lines = sub.read_bytes().splitlines(keepends=True)
    sub.write_bytes(b"".join([*lines[:2], b'{"type": "assistant", "mess\n', *lines[2:]]))
    session = project / f"{SID}.jsonl"
    failed = import_file(db, session)
    assert failed.error and f"{sub}:line 3" in failed.error and list_trajectories(db) == []
    ok = import_file(db, session, opts=ImportOptions(skip_bad_lines=True))
    assert ok.imported == 1 and ok.skipped_lines == []
    assert f"agent-{A}.jsonl: 1 bad line(s) skipped: 3" in ok.warnings
