"""OpenHands files import as the annotator must see them: V1 histories inside evaluation records,
the V1 SDK's conversation folder as one trajectory, and the issue resolver's output records."""

from __future__ import annotations

from pathlib import Path

import orjson

from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_paths
from annotator.importers.registry import detect, dir_importer, registry

FIXTURES = Path(__file__).parent / "fixtures" / "openhands"


def _read(fmt: str, path: Path):
    return [rec.trajectory for rec in registry()[fmt].read(path, ImportOptions())]


def _record(name: str):
    """An output.jsonl fixture of one record: the record as written, and its trajectory (detected)."""
    path = FIXTURES / name
    assert detect(path).name == "openhands"
    [traj] = _read("openhands", path)
    return orjson.loads(path.read_bytes()), traj


def test_benchmarks_record_with_v1_history_is_read_as_v1():
    record, traj = _record("benchmarks_v1_output.jsonl")
    assert traj.model == "litellm_proxy/minimax-m2.7"
    assert traj.task == record["instruction"]
    actions = [e for e in record["history"] if e["kind"] == "ActionEvent"]
    calls = [s for s in traj.steps if s.kind == "tool_call"]
    assert [(c.tool_name, c.tool_args) for c in calls] == [(a["tool_name"], a["tool_call"]["arguments"]) for a in actions]
    results = [s for s in traj.steps if s.kind == "tool_result"]
    assert len(results) == sum(e["kind"] == "ObservationEvent" for e in record["history"]) == 3
    assert all(r.content.strip() for r in results)
    # two observations answer actions of the stream; the third answers one it does not hold
    assert [r.link for r in results] == [calls[0].index, None, calls[1].index]
    assert {s.agent for s in traj.steps} == {"agent", "environment"}


def test_v1_conversation_folder_is_one_trajectory():
    folder = FIXTURES / "v1_conversation"
    assert dir_importer(folder).name == "openhands_v1"
    events = [orjson.loads(f.read_bytes()) for f in sorted((folder / "events").iterdir())]
    [rec] = registry()["openhands_v1"].read(folder, ImportOptions())
    traj = rec.trajectory
    assert rec.ledger.folded_by == {"finish observation": 3} and rec.ledger.read == len(events) + 1
    assert traj.model == "gpt-4o-mini"
    assert traj.task == "Hello. Please confirm you can see my tools."
    users = [e["llm_message"]["content"][0]["text"] for e in events if e["kind"] == "MessageEvent"]
    assert [s.content for s in traj.steps if s.kind == "message"] == users
    finishes = [e["action"]["message"] for e in events if e.get("tool_name") == "finish" and e["kind"] == "ActionEvent"]
    assert [s.content for s in traj.steps if s.kind == "final_answer"] == finishes
    assert [s.kind for s in traj.steps].count("system") == 2  # the prompt and its update with the new tool
    assert "tools: file_editor, terminal, finish, think" in traj.steps[3].content
    assert not any("unknown_type" in s.attributes for s in traj.steps)


def test_any_file_of_the_conversation_imports_the_whole_folder(db):
    folder = FIXTURES / "v1_conversation"
    event = sorted((folder / "events").iterdir())[3]
    assert detect(event).name == detect(folder / "base_state.json").name == "openhands_v1"
    [traj] = _read("openhands_v1", event)
    assert traj.source_path == str(folder) and len(traj.steps) == 8
    walked = import_paths(db, [folder.parent])  # the folder is one unit of a walk
    [unit] = [f for f in walked.files if f.path == str(folder)]
    assert unit.imported == 1 and not any("event-" in f.path for f in walked.files)
    events = import_paths(db, [folder / "events"])  # its event files walked: the first one stands for all
    assert [f.unchanged for f in events.files if not f.skipped] == [1]
    assert all("imported with its first event file" in f.skipped for f in events.files[1:])


def test_resolver_output_record():
    record, traj = _record("resolver_output.jsonl")
    assert traj.title == "neubig/pr-viewer#5: Add MIT license"
    assert traj.task == record["instruction"] and traj.steps[0].content == record["instruction"]
    assert (traj.steps[0].kind, traj.steps[0].agent) == ("message", "user")
    assert traj.outcome == "success"  # the resolver's own verdict, hidden from annotators
    calls = [s for s in traj.steps if s.kind == "tool_call"]
    assert [(c.tool_name, orjson.loads(c.tool_args)) for c in calls] == [
        ("run", {"command": "touch LICENSE"}), ("run_ipython", {"code": record["history"][3]["code"]}),
        ("run", {"command": "cat LICENSE"})]
    results = [s for s in traj.steps if s.kind == "tool_result"]
    assert [r.link for r in results] == [c.index for c in calls]
    assert [r.content for r in results] == [record["history"][i]["content"] for i in (2, 4, 6)]
    assert {s.agent for s in traj.steps} == {"user", "agent", "environment"}
    assert traj.steps[-1].kind == "final_answer"
    assert "result_explanation" not in traj.metadata and "success" not in traj.metadata
