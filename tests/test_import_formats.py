"""The generic and MAST formats: chat lists, JSONL, MAST per-trace JSON, plain-text logs, MAD full."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file
from annotator.importers.registry import detect, registry
from annotator.models import HIDDEN
from annotator.store.labels import current_labels
from annotator.store.trajectories import get_trajectory, list_trajectories

ROOT = Path(__file__).resolve().parents[1]
LOGS = Path(__file__).parent / "fixtures" / "logs"


def _write(path: Path, value) -> Path:
    path.write_bytes(value if isinstance(value, bytes) else orjson.dumps(value))
    return path


def test_openai_chat_sample(db):
    result = import_file(db, ROOT / "trajectories" / "openai_chat" / "swe_agent_function_calling.messages.json")
    assert result.ok and result.format == "openai_chat"
    traj = get_trajectory(db, result.trajectory_ids[0])
    assert (traj.steps[0].kind, traj.steps[1].role) == ("system", "user")
    assert traj.task.startswith("We're currently solving the following issue")
    calls = [s for s in traj.steps if s.kind == "tool_call"]
    assert calls and all(s.tool_name for s in calls)


def test_openai_chat_tool_calls_are_split_and_linked(db, tmp_path):
    messages = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}},
            {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Rome"}'}}]},
        {"role": "tool", "tool_call_id": "c2", "name": "weather", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c1", "name": "weather", "content": [{"type": "text", "text": "rain"}]},
        {"role": "assistant", "content": "Rain in Paris, sun in Rome.", "reasoning_content": "combine"},
    ]
    result = import_file(db, _write(tmp_path / "chat.json", {"model": "gpt-4o", "messages": messages}))
    traj = get_trajectory(db, result.trajectory_ids[0])
    assert [(s.kind, s.tool_name, s.link) for s in traj.steps] == [
        ("message", None, None), ("tool_call", "weather", 4), ("tool_call", "weather", 3),
        ("tool_result", "weather", 2), ("tool_result", "weather", 1), ("thought", None, None), ("message", None, None)]
    assert traj.steps[1].tool_args == '{"city": "Paris"}' and traj.steps[4].content == "rain"
    assert traj.model == "gpt-4o"


def test_jsonl_one_trajectory_per_line(db, tmp_path):
    lines = [
        {"id": "a", "system": "my-agent", "model": "gpt-4o", "benchmark": "toy", "outcome": "success", "score": 1,
         "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]},
        {"id": "b", "task": "Find the file", "success": False,
         "steps": [{"agent": "planner", "kind": "plan", "content": "look in src", "note": "kept"},
                   {"agent": "coder", "type": "tool_call", "tool": "ls", "arguments": {"path": "src"}},
                   "a bare string step"]},
        {"trajectory": [{"role": "user", "content": "hi"}]},
    ]
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(x) for x in lines) + b"\n")
    assert detect(path).name == "jsonl"
    result = import_file(db, path)
    assert (result.ok, result.imported) == (True, 3)
    a, b, c = (get_trajectory(db, i) for i in result.trajectory_ids)
    assert (a.system, a.model, a.benchmark, a.outcome, a.score) == ("my-agent", "gpt-4o", "toy", "success", 1.0)
    assert [s.content for s in a.steps] == ["2+2?", "4"]
    assert a.metadata[HIDDEN] == {"outcome": "success", "score": 1}
    assert (b.task, b.outcome) == ("Find the file", "failure")
    assert [(s.agent, s.kind, s.tool_name) for s in b.steps] == [("planner", "plan", None), ("coder", "tool_call", "ls"),
                                                                   (None, "message", None)]
    assert b.steps[0].attributes == {"note": "kept"}
    assert b.steps[1].tool_args == '{"path":"src"}'
    assert (c.source_ref, c.steps[0].role) == ("line 3", "user")
    again = import_file(db, path)
    assert (again.imported, again.unchanged) == (0, 3)


def test_jsonl_streams_line_by_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"steps": ["one"]}\n{"steps": ["two"]}\n{"steps": broken\n')
    reader = registry()["jsonl"].read(path, ImportOptions())
    assert next(reader).trajectory.steps[0].content == "one"  # yielded before the bad line is read
    assert next(reader).trajectory.steps[0].content == "two"


def test_mast_trace_ag2_shape(db, tmp_path, shared_data):
    records = orjson.loads((shared_data / "mad_human_sample" / "mad_human_sample.json").read_bytes())
    path = _write(tmp_path / "ag2_trace.json", records[1]["trace"].encode())
    assert detect(path).name == "mast_trace"
    result = import_file(db, path)
    assert result.ok, result.error
    traj = get_trajectory(db, result.trajectory_ids[0])
    trace = orjson.loads(records[1]["trace"])
    assert (traj.system, traj.outcome, len(traj.steps)) == ("AG2", "failure", len(trace["trajectory"]))
    assert traj.task == trace["problem_statement"][0]
    assert traj.metadata["instance_id"] == trace["instance_id"]
    assert set(traj.metadata[HIDDEN]) == {"note", "other_data"}
    assert all("seed_answer" not in s.content for s in traj.steps)


def test_mast_trace_metagpt_run(db, tmp_path, shared_data):
    records = orjson.loads((shared_data / "mad_human_sample" / "mad_human_sample.json").read_bytes())
    path = _write(tmp_path / "metagpt_run.json", records[2]["trace"].encode())
    result = import_file(db, path)
    assert result.format == "mast_trace"
    traj = get_trajectory(db, result.trajectory_ids[0])
    assert (traj.system, traj.task) == ("MetaGPT", "develop a program that detects palindromes in a text file")
    assert [s.agent for s in traj.steps] == ["SimpleCoder", "SimpleTester", "SimpleReviewer", "SimpleTester",
                                             "SimpleReviewer"]


def test_mast_trace_hyperagent_log_lines(db, tmp_path):
    lines = (LOGS / "hyperagent.log").read_text().splitlines()
    path = _write(tmp_path / "hyper.json", {"instance_id": "astropy__astropy-12907", "trajectory": lines})
    traj = get_trajectory(db, import_file(db, path).trajectory_ids[0])
    assert traj.system == "HyperAgent"
    assert [s.agent for s in traj.steps] == [None, "Planner", "Navigator", "Navigator", None]


def test_text_log_guesses_the_system_and_hides_the_verdict(db):
    result = import_file(db, LOGS / "appworld.txt")
    assert result.format == "text_log"
    traj = get_trajectory(db, result.trajectory_ids[0], with_raw=True)
    assert (traj.system, traj.outcome, len(traj.steps)) == ("AppWorld", "failure", 6)
    assert traj.metadata[HIDDEN] == {"evaluation": {"success": False, "num_tests": 3, "num_passed": 1}}
    assert traj.raw == (LOGS / "appworld.txt").read_bytes()


def test_text_log_every_fixture(db):
    expected = {"chatdev.log": ("ChatDev", 6), "metagpt_comm.txt": ("MetaGPT", 5), "ag2_console.txt": ("AG2", 5),
                "hyperagent.log": ("HyperAgent", 5), "magentic_one.log": ("Magentic-One", 5),
                "openmanus.log": ("OpenManus", 9), "notes.txt": (None, 3)}
    for name, (system, n) in expected.items():
        forced = "text_log" if name == "notes.txt" else None  # a .txt without markers is only a log on request
        result = import_file(db, LOGS / name, fmt=forced)
        assert result.ok and result.format == "text_log", result.error
        traj = get_trajectory(db, result.trajectory_ids[0])
        assert (traj.system, len(traj.steps)) == (system, n)


def test_text_log_system_override(db):
    result = import_file(db, LOGS / "notes.txt", fmt="text_log", opts=ImportOptions(system="ChatDev", model="m", benchmark="b"))
    summary = list_trajectories(db)[0]
    assert (summary.system, summary.model, summary.benchmark, summary.n_steps) == ("ChatDev", "m", "b", 3)
    assert result.ok


def test_mad_full_records(db, tmp_path):
    text = (LOGS / "chatdev.log").read_text()
    records = [{"mas_name": "ChatDev", "llm_name": "GPT-4o", "benchmark_name": "ProgramDev", "trace_id": 7,
                "trace": {"trajectory": text}, "mast_annotation": {"1.1": 1, "1.2": 0, "3.2": 1, "9.9": 1}},
               {"mas_name": "ChatDev", "llm_name": "GPT-4o", "benchmark_name": "ProgramDev", "trace_id": 7,
                "trace": {"trajectory": text}, "mast_annotation": {"1.1": 0}}]
    result = import_file(db, _write(tmp_path / "MAD_full_dataset.json", records))
    assert (result.format, result.imported, result.labels) == ("mad_full", 2, 4)
    assert result.warnings == ["record 1: unknown MAST code '9.9' kept in the raw record only",
                               "trajectory without a task (2 times)"]
    first, second = result.trajectory_ids
    assert first != second  # trace_id is not unique on its own
    labels = {lab.mode_id: lab.verdict for lab in current_labels(db, first)}
    assert labels == {"FM-1.1": "present", "FM-1.2": "absent", "FM-3.2": "present"}
    assert {lab.annotator for lab in current_labels(db)} == {"mad-llm"}
    traj = get_trajectory(db, first)
    assert (traj.system, traj.model, len(traj.steps), traj.steps[2].agent) == ("ChatDev", "GPT-4o", 6,
                                                                              "Chief Product Officer")


def test_changed_content_updates_and_keeps_labels(db, tmp_path):
    rec = {"mas_name": "AG2", "trace": {"trajectory": "a\n\nb"}, "mast_annotation": {"2.1": 1}}
    path = _write(tmp_path / "mad.json", [rec])
    first = import_file(db, path)
    rec["trace"]["trajectory"] = "a\n\nb\n\nc"
    second = import_file(db, _write(path, [rec]))
    assert (second.updated, second.trajectory_ids) == (1, first.trajectory_ids)
    assert get_trajectory(db, first.trajectory_ids[0]).steps[-1].content == "c"
    assert [lab.mode_id for lab in current_labels(db)] == ["FM-2.1"]


def test_text_log_takes_log_names_or_known_markers_only(tmp_path):
    from annotator.errors import UnknownFormat

    code = _write(tmp_path / "script.py", b"print('hello')\n\nprint('bye')\n")
    with pytest.raises(UnknownFormat):
        detect(code)
    marked = _write(tmp_path / "run.md", (LOGS / "magentic_one.log").read_bytes())
    assert detect(marked).name == "text_log"
    assert detect(_write(tmp_path / "run.log", b"plain words\n")).name == "text_log"
    with pytest.raises(UnknownFormat):  # a file without a log's name or markers: a README, a LICENSE
        detect(_write(tmp_path / "console", b"plain words\n"))


def test_corrected_dataset_labels_update_on_reimport(db, tmp_path):
    rec = {"mas_name": "AG2", "trace": {"trajectory": "a\n\nb"}, "mast_annotation": {"2.1": 1}}
    path = _write(tmp_path / "mad.json", [rec])
    import_file(db, path)
    assert import_file(db, path).unchanged == 1
    rec["mast_annotation"]["2.1"] = 0  # the dataset fixes a label, the trace stays the same
    again = import_file(db, _write(path, [rec]))
    assert (again.updated, again.labels) == (1, 1)
    assert [(lab.mode_id, lab.verdict) for lab in current_labels(db)] == [("FM-2.1", "absent")]
