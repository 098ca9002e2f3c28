"""Log splitters on realistic logs of each system: step boundaries, agents, kinds, nothing dropped."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from annotator.importers.log_splitters import guess_system, known_systems, parse_speaker, split_evaluation, split_log

LOGS = Path(__file__).parent / "fixtures" / "logs"


def _steps(name: str, system: str | None = None):
    return split_log((LOGS / name).read_text(encoding="utf-8"), system)


def _who(steps):
    return [(s.agent, s.kind) for s in steps]


@pytest.mark.parametrize(
    ("name", "system"),
    [
        ("chatdev.log", "ChatDev"),
        ("metagpt_comm.txt", "MetaGPT"),
        ("ag2_console.txt", "AG2"),
        ("appworld.txt", "AppWorld"),
        ("hyperagent.log", "HyperAgent"),
        ("magentic_one.log", "Magentic-One"),
        ("openmanus.log", "OpenManus"),
        ("notes.txt", None),
    ],
)
def test_guess_system_from_markers(name, system):
    assert guess_system((LOGS / name).read_text(encoding="utf-8")) == system


def test_every_known_system_has_a_fixture():
    assert set(known_systems()) == {"ChatDev", "MetaGPT", "AG2", "AppWorld", "HyperAgent", "Magentic-One", "OpenManus"}


def test_chatdev_turns_phases_and_usage_blocks():
    steps = _steps("chatdev.log", "ChatDev")
    assert _who(steps) == [
        (None, "log"),
        ("System", "log"),
        ("Chief Product Officer", "message"),
        (None, "event"),
        ("Chief Executive Officer", "message"),
        ("Programmer", "message"),
    ]
    assert steps[2].recipient == "Chief Executive Officer"
    assert steps[2].group == "DemandAnalysis, turn 0"
    assert steps[5].group == "Coding, turn 0"
    assert "prompt_tokens: 440" in steps[3].content
    assert steps[5].content.endswith("import tkinter as tk\n```")


def test_metagpt_communication_log():
    steps = _steps("metagpt_comm.txt", "MetaGPT")
    assert _who(steps) == [
        (None, "log"),
        ("Human", "message"),
        ("SimpleCoder", "message"),
        ("SimpleTester", "message"),
        ("SimpleReviewer", "message"),
    ]
    assert steps[1].recipient is None  # addressed to everyone
    assert steps[4].recipient == "SimpleTester"
    assert "fib(n - 1) + fib(n - 2)" in steps[2].content
    assert not steps[2].content.rstrip().endswith("-" * 10)  # the rule between messages is not content


def test_metagpt_loguru_log_from_the_mad_sample(shared_data):
    records = orjson.loads((shared_data / "mad_human_sample" / "mad_human_sample.json").read_bytes())
    content = orjson.loads(records[2]["trace"])["content"]
    steps = split_log(content, "MetaGPT")
    assert [s.agent for s in steps] == ["SimpleCoder", "SimpleTester", "SimpleReviewer", "SimpleTester", "SimpleReviewer"]
    assert steps[0].attributes == {"name": "Alice"}
    assert "def detect_palindromes(file_path):" in steps[0].content


def test_metagpt_real_communication_log_from_the_mad_sample(shared_data):
    records = orjson.loads((shared_data / "mad_human_sample" / "mad_human_sample.json").read_bytes())
    steps = split_log(records[3]["trace"], "MetaGPT")
    assert [s.agent for s in steps] == [None, "Human", "SimpleCoder", "SimpleTester", "SimpleReviewer",
                                        "SimpleTester", "SimpleReviewer"]
    assert steps[-1].content.endswith("=== Communication Log Ended at 2025-03-27 01:21:47 ===")


def test_ag2_console_chat():
    steps = _steps("ag2_console.txt", "AG2")
    assert [(s.agent, s.recipient, s.kind) for s in steps] == [
        ("mathproxyagent", "assistant", "message"),
        ("assistant", "mathproxyagent", "message"),
        (None, None, "event"),
        ("mathproxyagent", "assistant", "message"),
        ("assistant", "mathproxyagent", "message"),
    ]
    assert "Code output: 144" in steps[3].content


def test_appworld_task_header_responses_and_messages():
    text, verdict = split_evaluation((LOGS / "appworld.txt").read_text(encoding="utf-8"))
    assert verdict == {"success": False, "num_tests": 3, "num_passed": 1}
    steps = split_log(text, "AppWorld")
    assert [(s.agent, s.recipient, s.kind) for s in steps] == [
        (None, None, "event"),
        ("Supervisor", None, "message"),
        ("Supervisor", "Spotify", "message"),
        ("Spotify", None, "message"),
        ("Spotify", "Supervisor", "message"),
        ("Supervisor", None, "message"),
    ]
    assert steps[0].group == "82e2fac_1"
    assert all('"success"' not in s.content for s in steps)


def test_hyperagent_planner_interns_and_errors():
    steps = _steps("hyperagent.log", "HyperAgent")
    assert [(s.agent, s.recipient, s.kind) for s in steps] == [
        (None, None, "log"),
        ("Planner", "Codebase Navigator", "plan"),
        ("Navigator", None, "message"),
        ("Navigator", "Planner", "handoff"),
        (None, None, "error"),
    ]
    assert "open_file._run" in steps[2].content


def test_magentic_one_console():
    steps = _steps("magentic_one.log", "Magentic-One")
    assert [(s.agent, s.recipient, s.kind) for s in steps] == [
        ("human", None, "message"),
        ("Orchestrator", None, "thought"),
        ("Orchestrator", "WebSurfer", "message"),
        ("WebSurfer", None, "message"),
        ("Orchestrator", None, "plan"),
    ]
    assert steps[1].attributes["timestamp"] == "2024-10-21T15:32:14.000001"


def test_openmanus_steps_thoughts_and_tools():
    steps = _steps("openmanus.log", "OpenManus")
    assert [(s.agent, s.kind, s.tool_name, s.group) for s in steps] == [
        (None, "log", None, None),
        (None, "event", None, "step 1"),
        ("Manus", "thought", None, "step 1"),
        ("Manus", "log", None, "step 1"),
        ("Manus", "tool_call", "python_execute", "step 1"),
        ("Manus", "tool_result", "python_execute", "step 1"),
        (None, "event", None, "step 2"),
        ("Manus", "thought", None, "step 2"),
        ("Manus", "error", None, "step 2"),
    ]
    assert "{'observation': 'True\\n', 'success': True}" in steps[5].content


def test_generic_fallback_blank_line_blocks():
    steps = _steps("notes.txt")
    assert [s.content for s in steps] == [
        "The agent started by reading the task.",
        "It then called the search tool twice\nand read the results.",
        "Finally it answered.",
    ]
    assert {s.kind for s in steps} == {"log"}


def test_named_system_without_its_markers_falls_back_to_blocks():
    steps = _steps("notes.txt", "ChatDev")
    assert len(steps) == 3


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.iterdir()))
def test_no_text_is_dropped(name):
    text = (LOGS / name).read_text(encoding="utf-8")
    body, _ = split_evaluation(text)
    steps = split_log(body)
    joined = "\n".join(s.content for s in steps)
    words = [w for w in body.split() if set(w) != {"-"}]
    assert [w for w in joined.split() if set(w) != {"-"}] == words
    assert [s.index for s in steps] == list(range(len(steps)))


def test_parse_speaker():
    assert parse_speaker("Orchestrator (-> WebSurfer)") == ("Orchestrator", "WebSurfer", "message")
    assert parse_speaker("Orchestrator (thought)") == ("Orchestrator", None, "thought")
    assert parse_speaker("WebSurfer") == ("WebSurfer", None, "message")


def test_a_wrongly_named_system_still_gets_the_splitter_its_markers_name():
    steps = _steps("magentic_one.log", "ChatDev")
    assert [s.agent for s in steps] == ["human", "Orchestrator", "Orchestrator", "WebSurfer", "Orchestrator"]
