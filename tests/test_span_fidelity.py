"""Span traces import with what their producers put in them: messages in span events and on
agent spans (GenAI), the Claude Agent SDK's query span (OpenInference), Google ADK's request
and response JSON, and AgentCore session exports (real upstream fixtures)."""

from __future__ import annotations

from pathlib import Path

import orjson

from annotator.importers.base import ImportOptions
from annotator.importers.registry import detect, registry

FIXTURES = Path(__file__).parent / "fixtures" / "spans"


def _read(path: Path, fmt: str | None = None):
    fmt = fmt or detect(path).name
    return fmt, [rec.trajectory for rec in registry()[fmt].read(path, ImportOptions())]


def _calls(traj):
    return [(s.tool_name, orjson.loads(s.tool_args)) for s in traj.steps if s.kind == "tool_call"]


def _linked(traj) -> bool:
    calls = [s for s in traj.steps if s.kind == "tool_call"]
    return all(s.link is not None and traj.steps[s.link].kind == "tool_result" for s in calls) and \
        all(traj.steps[s.link].call_id == s.call_id for s in calls)


def test_genai_messages_in_operation_details_events_and_on_the_agent_span():
    fmt, [traj] = _read(FIXTURES / "otel_genai_convention_spans.json")
    assert fmt == "otel_genai" and traj.model == "gpt-4o"
    assert traj.task == "What's the weather in Paris and London?"
    texts = [s.content for s in traj.steps if s.kind == "message" and s.role == "assistant"]
    assert texts == ["Let me check the weather for both cities.",
                     "The weather in Paris is rainy at 57°F. I was unable to retrieve London's weather due to "
                     "a service timeout."]
    assert _calls(traj) == [("get_weather", {"location": "Paris"}), ("get_weather", {"location": "London"})]
    assert _linked(traj)
    results = [s.content for s in traj.steps if s.kind == "tool_result"]
    assert results == ["rainy, 57°F", "TimeoutError"]  # the failed call's error.type
    assert sum(s.role == "user" for s in traj.steps) == 1  # the question, once


def test_claude_agent_sdk_query_span():
    fmt, [traj] = _read(FIXTURES / "claude_live_spans.json")
    spans = orjson.loads((FIXTURES / "claude_live_spans.json").read_bytes())
    query = next(s for s in spans if s["name"] == "ClaudeAgentSDK.query")["attributes"]
    assert fmt == "openinference" and traj.model == query["llm.model_name"] == "us.anthropic.claude-sonnet-4-6"
    assert traj.task == query["input.value"]
    said = [s.content for s in traj.steps if s.kind == "message" and s.role == "assistant"]
    assert said == [query[f"llm.output_messages.{i}.message.content.0"] for i in (0, 3, 5)]
    assert said[-1] == query["output.value"]
    assert [n for n, _ in _calls(traj)] == ["Agent", "Agent", "Bash", "Bash", "Agent", "Bash"]
    assert _linked(traj)
    # the coordinator's words come before the sub-agent calls they announce
    first_call = next(s.index for s in traj.steps if s.kind == "tool_call")
    assert traj.steps[first_call - 1].content == said[0]


def test_agentcore_session_export_of_claude_spans_with_reasoning():
    fmt, [traj] = _read(FIXTURES / "claude_adot_spans.json")
    doc = orjson.loads((FIXTURES / "claude_adot_spans.json").read_bytes())
    assert set(doc) == {"session_id", "span_count", "spans"}
    assert fmt == "openinference" and traj.model == "us.anthropic.claude-sonnet-4-6"
    assert traj.task == "What is 42 * 7, and how many miles is that in kilometers?"
    assert [s.kind for s in traj.steps if s.role == "assistant" and s.kind != "tool_call"] == \
        ["thought", "message", "message"]
    assert [n for n, _ in _calls(traj)] == ["Agent", "Agent", "Bash", "Bash"] and _linked(traj)


def test_agentcore_wrapper_imports_like_the_bare_span_list(tmp_path):
    wrapped = FIXTURES / "openai_agents_genai_adot_spans.json"
    bare = tmp_path / "bare.json"
    bare.write_bytes(orjson.dumps(orjson.loads(wrapped.read_bytes())["spans"]))
    fmt, [traj] = _read(wrapped)
    forced = _read(wrapped, "otel_genai")[1]
    _, [plain] = _read(bare)
    assert fmt == "otel_genai" and len(forced) == 1
    assert [(s.kind, s.content) for s in traj.steps] == [(s.kind, s.content) for s in plain.steps]
    assert traj.task == "What is 42 * 7, and what's the weather in Seattle?"
    assert _calls(traj) == [("multiply_numbers", {"a": 42, "b": 7})] and _linked(traj)


def test_google_adk_request_and_response():
    fmt, [traj] = _read(FIXTURES / "adk_live_spans.json")
    assert fmt == "otel_genai" and traj.model == "gemini-3.5-flash"
    assert traj.task == "What is 15 multiplied by 37?"
    assert traj.steps[1].kind == "system" and traj.steps[1].content.startswith("You are a math assistant.")
    assert _calls(traj) == [("calculator", {"expression": "15 * 37"})] and _linked(traj)
    assert [s.content for s in traj.steps if s.kind == "tool_result"] == ['{"result": "555"}']
    assert traj.steps[-1].content == "15 multiplied by 37 is 555."
    assert len(traj.steps) == 6  # agent, system, question, call, result, answer: nothing twice
