"""Every agent-log sample in the shared data imports with the steps, agents, tool calls and
outcome its source shows (counts checked by reading each file)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from annotator.importers.base import ImportOptions
from annotator.importers.registry import detect, registry
from annotator.models import HIDDEN

FORMATS = Path(__file__).resolve().parents[2] / "shared" / "data" / "formats"

# path, format, steps, tool calls, agents, outcome, score, model
SAMPLES = [
    ("claude_code/representative_messages.jsonl", "claude_code", 11, 2,
     {"claude", "environment", "user"}, "unknown", None, "claude-3-sonnet-20240229"),
    ("codex_cli/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl", "codex_cli", 10, 3,
     {"codex", "environment", "user"}, "unknown", None, "synthetic-model"),
    ("inspect_ai/2025-05-12T20-27-36-04-00_browser.json", "inspect_ai", 10, 4,
     {"assistant", "environment", "user"}, "success", 1.0, "openai/gpt-4o-mini"),
    ("inspect_ai/log_read_sample.eval", "inspect_ai", 3, 0,
     {"assistant", "system", "user"}, "success", 1.0, "ollama/gemma3"),
    ("mini_swe_agent/github_issue.traj.json", "mini_swe_agent", 32, 10,
     {"assistant", "environment", "system", "user"}, "unknown", None, None),
    ("mini_swe_agent/local.traj.json", "mini_swe_agent", 8, 2,
     {"assistant", "environment", "system", "user"}, "unknown", None, None),
    ("openhands/basic.json", "openhands", 5, 1,
     {"agent", "environment", "user"}, "unknown", None, "claude-3-5-sonnet-20241022"),
    ("openhands/wrong_initial_state.json", "openhands", 11, 3,
     {"agent", "environment", "user"}, "unknown", None, "claude-3-5-sonnet-20241022"),
    ("openinference/openinference_client_span_tool_calls.attributes.json", "openinference", 5, 1,
     {"assistant", "environment", "user"}, "unknown", None, "gpt-4-0613"),
    ("openinference/smolagents_live_spans.json", "openinference", 9, 2,
     {"CodeAgent", "system", "user"}, "unknown", None, "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"),
    ("otel_genai/openai_agents_genai_live_spans.json", "otel_genai", 22, 5,
     {"coordinator", "research_specialist", "math_specialist", "system", "user"}, "unknown", None,
     "gpt-4o-mini-2024-07-18"),
    ("otel_genai/otel_genai_client_span_tool_calls.attributes.json", "otel_genai", 5, 1,
     {"assistant", "environment", "user"}, "unknown", None, "gpt-4-0613"),
    ("swe_agent/6e44b9__sweagenttestrepo-1c2844.traj", "swe_agent", 17, 5, {"main", "environment", "system", "user"}, "unknown", None, "gpt-4o"),
    ("swe_agent/function_calling_simple.traj", "swe_agent", 17, 5, {"main", "environment", "system", "user"}, "unknown", None, None),
    ("swe_agent/marshmallow-code__marshmallow-1867.function_calling.traj", "swe_agent", 35, 11, {"main", "environment", "system", "user"},
     "unknown", None, "gpt-4o"),
]


def _read(rel: str):
    path = FORMATS / rel
    importer = detect(path)
    return importer.name, list(importer.read(path, ImportOptions()))


@pytest.mark.parametrize("rel,fmt,n_steps,n_calls,agents,outcome,score,model", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_sample_imports(rel, fmt, n_steps, n_calls, agents, outcome, score, model):
    name, records = _read(rel)
    assert name == fmt
    assert len(records) == 1
    traj = records[0].trajectory
    kinds = Counter(s.kind for s in traj.steps)
    assert len(traj.steps) == n_steps
    assert [s.index for s in traj.steps] == list(range(n_steps))
    assert kinds["tool_call"] == n_calls
    assert kinds["tool_result"] == n_calls
    assert {s.agent for s in traj.steps if s.agent} == agents
    assert (traj.outcome, traj.score, traj.model) == (outcome, score, model)
    assert traj.source_format == fmt and traj.raw and traj.content_hash
    for call in (s for s in traj.steps if s.kind == "tool_call"):
        result = traj.steps[call.link]
        assert result.kind == "tool_result" and result.link == call.index
        assert result.tool_name == call.tool_name
    assert all(s.raw is not None for s in traj.steps)


def test_every_new_format_has_a_sample():
    covered = {s[1] for s in SAMPLES}
    agent_formats = {"claude_code", "codex_cli", "inspect_ai", "mini_swe_agent", "openhands", "openinference",
                     "otel_genai", "swe_agent"}
    assert agent_formats <= set(registry()) and agent_formats == covered


def test_span_tree_and_agents_from_agent_spans():
    _, [rec] = _read("otel_genai/openai_agents_genai_live_spans.json")
    steps = rec.trajectory.steps
    starts = {s.agent: s.index for s in steps if s.content.endswith(" starts")}
    assert list(starts) == ["coordinator", "research_specialist", "math_specialist"]
    # The coordinator delegates, the specialist runs, then the delegation's result arrives.
    ask = next(s for s in steps if s.tool_name == "ask_research_specialist" and s.kind == "tool_call")
    assert ask.index < starts["research_specialist"] < ask.link
    lookup = next(s for s in steps if s.tool_name == "lookup_stock_price" and s.kind == "tool_result")
    assert lookup.parent == starts["research_specialist"] and lookup.content == "AMZN: $240.98"
    assert steps[ask.link].parent == starts["coordinator"]
    assert all(s.attributes.get("span_id") for s in steps)
    assert rec.trajectory.metadata["agents"] == ["coordinator", "research_specialist", "math_specialist"]


def test_openinference_chain_spans_become_groups():
    _, [rec] = _read("openinference/smolagents_live_spans.json")
    steps = rec.trajectory.steps
    assert [s.group for s in steps if s.kind == "tool_call"] == ["Step 1", "Step 2"]
    assert [s.tool_name for s in steps if s.kind == "tool_call"] == ["web_search", "final_answer"]
    assert steps[1].kind == "system" and steps[2].content == "New task:\nWhat is the population of Tokyo?"
    assert (steps[3].tokens_in, steps[3].tokens_out) == (2366, 52)


def test_inspect_scores_are_outcome_not_steps():
    _, [rec] = _read("inspect_ai/2025-05-12T20-27-36-04-00_browser.json")
    traj = rec.trajectory
    assert traj.metadata[HIDDEN]["scores"]["includes"]["value"] == "C"
    assert traj.benchmark == "browser" and traj.metadata["epoch"] == 1
    assert not any(s.kind == "evaluation" or "includes" in s.content for s in traj.steps)
    assert not any("attachment://" in s.content for s in traj.steps)
    assert traj.steps[1].tokens_in == 1124


def test_swe_agent_outcome_fields_are_hidden():
    _, [rec] = _read("swe_agent/6e44b9__sweagenttestrepo-1c2844.traj")
    traj = rec.trajectory
    hidden = traj.metadata[HIDDEN]
    assert hidden["exit_status"] == "submitted" and "diff --git" in hidden["submission"]
    assert "submission" not in traj.metadata["info"] and "exit_status" not in traj.metadata["info"]
    assert [s.tool_name for s in traj.steps if s.kind == "tool_call"] == ["find_file", "open", "edit", "bash", "submit"]
    assert traj.steps[3].content == "find_file missing_colon.py"


def test_swe_agent_repeated_call_ids_pair_with_the_latest_call():
    _, [rec] = _read("swe_agent/marshmallow-code__marshmallow-1867.function_calling.traj")
    calls = [s for s in rec.trajectory.steps if s.kind == "tool_call"]
    assert all(rec.trajectory.steps[c.link].index == c.index + 1 for c in calls)


def test_mini_swe_agent_commands_and_exit_codes():
    _, [rec] = _read("mini_swe_agent/github_issue.traj.json")
    steps = rec.trajectory.steps
    results = [s for s in steps if s.kind == "tool_result"]
    assert [s.attributes.get("exit_code") for s in results[:3]] == [1, 0, 0]
    assert steps[3].content.startswith("cat ") and steps[3].tool_name == "bash"
    assert "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in [s for s in steps if s.kind == "tool_call"][-1].content


def test_openhands_usage_counted_once_per_model_response():
    _, [rec] = _read("openhands/wrong_initial_state.json")
    steps = rec.trajectory.steps
    counted = [s for s in steps if s.tokens_in is not None]
    assert len(counted) == 4  # four model responses; observations repeat them
    run = next(s for s in steps if s.tool_name == "execute_bash" and s.kind == "tool_result")
    assert run.attributes["exit_code"] == 0 and steps[-1].kind == "final_answer"


def test_codex_dedupes_event_msg_and_hides_encrypted_reasoning():
    _, [rec] = _read("codex_cli/rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl")
    steps = rec.trajectory.steps
    texts = [s.content for s in steps]
    assert texts.count("List the synthetic files.") == 1
    assert texts.count("The synthetic files are alpha.txt and beta.txt.") == 1
    assert not any("SYNTHETIC_ENCRYPTED" in t for t in texts)
    assert [s.content for s in steps if s.kind == "tool_result"] == ["./alpha.txt\n./beta.txt", "Done!",
                                                                      '{"status":"ok"}']
    assert steps[-1].kind == "event" and steps[-1].attributes["unknown_type"] == "future_synthetic_record"
    assert rec.warnings == ["unknown event of type 'future_synthetic_record' kept as a generic step"]


def test_claude_code_summary_is_title_and_results_pair():
    _, [rec] = _read("claude_code/representative_messages.jsonl")
    traj = rec.trajectory
    assert traj.title.startswith("User learned about Python decorators")
    assert traj.system == "Claude Code" and traj.metadata["session"]["sessionId"] == "test_session"
    edit = next(s for s in traj.steps if s.tool_name == "Edit" and s.kind == "tool_call")
    assert traj.steps[edit.link].content == "File created successfully at: /tmp/decorator_example.py"


def test_reimport_is_a_no_op(db):
    from annotator.importers.importing import import_paths

    itbench = Path(__file__).parent / "fixtures" / "itbench_run"
    first = import_paths(db, [FORMATS, itbench])
    assert not first.failed and first.total("imported") == 18
    again = import_paths(db, [FORMATS, itbench])
    assert (again.total("imported"), again.total("updated"), again.total("unchanged")) == (0, 0, 18)


def test_runs_of_the_same_task_get_their_own_ids(tmp_path):
    """Run logs are identified by content: a second run of the same instance is not an update."""
    src = FORMATS / "swe_agent" / "6e44b9__sweagenttestrepo-1c2844.traj"
    other = tmp_path / "other-model" / src.name
    other.parent.mkdir()
    other.write_bytes(src.read_bytes().replace(b'"exit_status": "submitted"', b'"exit_status": "exit_cost"'))
    moved = tmp_path / src.name
    moved.write_bytes(src.read_bytes())
    ids = [list(detect(p).read(p, ImportOptions()))[0].trajectory.id for p in (src, moved, other)]
    assert ids[0] == ids[1] != ids[2]
