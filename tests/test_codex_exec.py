"""The ``codex exec --json`` stream: the fixture built from Codex's ThreadEvent/ThreadItem types
(tests/fixtures/codex_exec/SOURCES.md), failed turns, unfinished items, resumed threads and
unknown events."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file
from annotator.importers.registry import detect
from annotator.models import HIDDEN
from annotator.store.trajectories import get_trajectory

FIXTURE = Path(__file__).parent / "fixtures" / "codex_exec" / "fix_iso_week.jsonl"
THREAD = "0199a213-81c0-7800-8aa1-bbab2a035a53"


def _read(path: Path):
    importer = detect(path)
    return importer.name, list(importer.read(path, ImportOptions()))


def _write(path: Path, rows: list) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def test_fixture_imports_with_steps_agents_tools_and_usage():
    name, [rec] = _read(FIXTURE)
    traj = rec.trajectory
    assert name == "codex_exec" and rec.warnings == []
    assert traj.title == f"codex exec {THREAD}" and traj.system == "Codex CLI" and traj.outcome == "unknown"
    assert traj.metadata["usage"] == {"input_tokens": 24763, "cached_input_tokens": 19200, "output_tokens": 1122}
    assert traj.metadata["turns"] == 1 and traj.metadata["thread_id"] == THREAD
    steps = traj.steps
    assert len(steps) == 17 and [s.index for s in steps] == list(range(17))
    assert Counter(s.kind for s in steps) == {"tool_call": 7, "tool_result": 6, "thought": 2, "plan": 1, "message": 1}
    assert {s.agent for s in steps} == {"codex", "environment"}
    assert all(s.raw is not None for s in steps) and len({s.id for s in steps}) == 17
    for call in (s for s in steps if s.kind == "tool_call" and s.link is not None):
        result = steps[call.link]
        assert result.kind == "tool_result" and result.link == call.index and result.call_id == call.call_id
        assert result.tool_name == call.tool_name
    # the web search has no result in the stream
    assert [s.tool_name for s in steps if s.kind == "tool_call" and s.link is None] == ["web_search"]


def test_steps_take_the_place_their_item_started():
    _, [rec] = _read(FIXTURE)
    steps = rec.trajectory.steps
    # the to-do list is placed where it was issued, with its final state
    assert steps[3].kind == "plan" and steps[3].content.splitlines() == [
        "[x] Reproduce the failing test", "[x] Fix ISO week parsing in dates.py", "[x] Re-run the tests"]
    # two commands ran side by side; the second finished first
    seq = [(s.kind, s.attributes["item_id"]) for s in steps[5:9]]
    assert seq == [("tool_call", "item_4"), ("tool_call", "item_5"), ("tool_result", "item_5"),
                   ("tool_result", "item_4")]
    failed = steps[2]
    assert failed.attributes == {"item_id": "item_1", "status": "failed", "exit_code": 1, "is_error": True}
    assert steps[1].content == "bash -lc 'pytest -q tests/test_dates.py'"
    assert orjson.loads(steps[1].tool_args) == {"command": "bash -lc 'pytest -q tests/test_dates.py'"}
    mcp = next(s for s in steps if s.tool_name == "search" and s.kind == "tool_call")
    assert mcp.attributes["server"] == "docs" and steps[mcp.link].content.startswith("%G, %V and %u")
    change = next(s for s in steps if s.tool_name == "file_change" and s.kind == "tool_call")
    assert change.content == "update src/dates.py" and steps[change.link].content == "completed"
    assert steps[-1].kind == "message" and steps[-1].content.startswith("Fixed `parse_iso_week`")


def test_failed_turn_is_a_failure_with_its_error(tmp_path):
    rows = [
        {"type": "thread.started", "thread_id": "t-1"},
        {"type": "turn.started"},
        {"type": "item.started", "item": {"id": "item_0", "type": "command_execution", "command": "make test",
                                          "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
        {"type": "item.updated", "item": {"id": "item_0", "type": "command_execution", "command": "make test",
                                          "aggregated_output": "building", "exit_code": None, "status": "in_progress"}},
        {"type": "error", "message": "stream disconnected before completion"},
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
    ]
    name, [rec] = _read(_write(tmp_path / "run.jsonl", rows))
    traj = rec.trajectory
    assert name == "codex_exec" and traj.outcome == "failure"
    assert traj.metadata[HIDDEN] == {"turn_failed": ["stream disconnected before completion"]}
    assert [(s.kind, s.content) for s in traj.steps] == [
        ("tool_call", "make test"), ("error", "stream disconnected before completion")]
    assert traj.steps[0].attributes["incomplete"] is True and traj.steps[0].link is None
    assert rec.warnings == ["item started but never completed kept as an incomplete call"]


def test_unknown_events_and_items_are_kept_and_counted(tmp_path):
    rows = [
        {"type": "thread.started", "thread_id": "t-2"},
        {"type": "item.completed", "item": {"id": "item_0", "type": "hologram", "beam": 1}},
        {"type": "session.teleported", "to": "mars"},
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2}},
    ]
    _, [rec] = _read(_write(tmp_path / "run.jsonl", rows))
    steps = rec.trajectory.steps
    assert [s.kind for s in steps] == ["event", "event", "message"]
    assert [s.attributes["unknown_type"] for s in steps[:2]] == ["item/hologram", "session.teleported"]
    assert rec.warnings == ["unknown event of type 'item/hologram' kept as a generic step",
                            "unknown event of type 'session.teleported' kept as a generic step"]


def test_resumed_thread_continues_and_usage_is_summed(tmp_path):
    def run(text, tokens):
        return [
            {"type": "thread.started", "thread_id": "t-3"},
            {"type": "turn.started"},
            {"type": "item.started", "item": {"id": "item_0", "type": "command_execution", "command": "ls",
                                              "aggregated_output": "", "exit_code": None, "status": "in_progress"}},
            {"type": "item.completed", "item": {"id": "item_0", "type": "command_execution", "command": "ls",
                                                "aggregated_output": text, "exit_code": 0, "status": "completed"}},
            {"type": "turn.completed", "usage": {"input_tokens": tokens, "cached_input_tokens": 1, "output_tokens": 3}},
        ]
    _, records = _read(_write(tmp_path / "run.jsonl", run("a", 100) + run("b", 50)))
    [traj] = [r.trajectory for r in records]
    assert traj.metadata["usage"] == {"input_tokens": 150, "cached_input_tokens": 2, "output_tokens": 6}
    assert traj.metadata["turns"] == 2
    calls = [s for s in traj.steps if s.kind == "tool_call"]
    assert [traj.steps[c.link].content for c in calls] == ["a", "b"]  # item_0 of each run pairs with its own result


def test_reimport_is_unchanged(db):
    first = import_file(db, FIXTURE)
    again = import_file(db, FIXTURE)
    assert (first.format, first.imported, again.unchanged) == ("codex_exec", 1, 1)
    stored = get_trajectory(db, first.trajectory_ids[0])
    assert len(stored.steps) == 17 and stored.metadata["usage"]["output_tokens"] == 1122


SKILL = Path(__file__).parent / "fixtures" / "codex_exec" / "skill_capture_events.jsonl"
STDERR = b"Reading prompt from stdin...\n"
MODELS_CACHE = b"2026-03-02T10:00:00.000000Z ERROR codex_models_manager::cache: failed to load models cache\n"


def _steps(traj):
    return [(s.kind, s.tool_name, s.tool_args, s.content) for s in traj.steps]


def test_stderr_lines_in_the_stream_are_left_out_and_counted(tmp_path):
    lines = SKILL.read_bytes().splitlines(keepends=True)
    mixed = tmp_path / "run.jsonl"
    mixed.write_bytes(STDERR + lines[0] + MODELS_CACHE + b"".join(lines[1:]))
    name, [rec] = _read(mixed)
    _, [clean] = _read(SKILL)
    assert name == "codex_exec"
    assert _steps(rec.trajectory) == _steps(clean.trajectory)
    assert [s.kind for s in rec.trajectory.steps] == ["message", "tool_call", "tool_result", "message"]
    call, result = rec.trajectory.steps[1:3]
    assert call.tool_name == "command_execution" and "SKILL.md" in call.tool_args and result.link == call.index
    assert rec.ledger.dropped_by == {"not a codex exec event (stderr text, a header)": 2}
    assert rec.ledger.read == len(lines) + 2 and not rec.warnings


def test_a_json_header_before_the_stream_is_left_out(tmp_path):
    header = orjson.dumps({"model": "gpt-5-codex", "sandbox": "workspace-write", "workdir": "/repo"}) + b"\n"
    path = tmp_path / "run.jsonl"
    path.write_bytes(header + FIXTURE.read_bytes())
    for fmt in (None, "codex_exec"):
        result = import_file(_db(tmp_path, fmt), path, fmt)
        assert result.ok and result.imported == 1, result.error
    name, [rec] = _read(path)
    _, [clean] = _read(FIXTURE)
    assert _steps(rec.trajectory) == _steps(clean.trajectory)
    assert rec.ledger.dropped_by["not a codex exec event (stderr text, a header)"] == 1


def _db(tmp_path, tag):
    from annotator.store import open_db

    return open_db(tmp_path / f"m{tag}.db")
