"""Shapes of the agent formats that the shared samples do not show: OTLP/JSON containers, the
older OTel GenAI message forms, split Claude Code responses and sidechains, stream-json
results, Codex event enrichment, the mini-swe-agent v2 object and OpenHands eval records."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from annotator.errors import ImportFailure
from annotator.importers.base import ImportOptions
from annotator.importers.registry import detect
from annotator.models import HIDDEN


def _write_json(path: Path, value: object) -> Path:
    path.write_bytes(orjson.dumps(value))
    return path


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _import(path: Path) -> tuple[str, list]:
    importer = detect(path)
    return importer.name, list(importer.read(path, ImportOptions()))


def _kv(key: str, value: dict) -> dict:
    return {"key": key, "value": value}


def _otlp_span(trace, span, parent, name, start, attrs, **extra):
    return {"traceId": trace, "spanId": span, "parentSpanId": parent, "name": name,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 100), "attributes": attrs, **extra}


OTLP = {"resourceSpans": [{
    "resource": {"attributes": [_kv("service.name", {"stringValue": "travel-desk"})]},
    "scopeSpans": [{"scope": {"name": "agents"}, "spans": [
        _otlp_span("t1", "a", "", "invoke_agent planner", 1000, [
            _kv("gen_ai.operation.name", {"stringValue": "invoke_agent"}),
            _kv("gen_ai.agent.name", {"stringValue": "planner"})]),
        _otlp_span("t1", "b", "a", "chat", 1100, [
            _kv("gen_ai.operation.name", {"stringValue": "chat"}),
            _kv("gen_ai.request.model", {"stringValue": "m-1"}),
            _kv("gen_ai.usage.input_tokens", {"intValue": "40"}),
            _kv("gen_ai.input.messages", {"stringValue": '[{"role":"user","parts":[{"type":"text","content":"Book a room"}]}]'}),
            _kv("gen_ai.output.messages", {"stringValue": '[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"book","arguments":{"n":1}}]}]'})]),
        _otlp_span("t1", "c", "a", "execute_tool book", 1300, [
            _kv("gen_ai.operation.name", {"stringValue": "execute_tool"}),
            _kv("gen_ai.tool.name", {"stringValue": "book"}),
            _kv("gen_ai.tool.call.id", {"stringValue": "c1"}),
            _kv("gen_ai.tool.call.result", {"stringValue": "no rooms"})],
            status={"code": 2, "message": "booking failed"}),
        _otlp_span("t2", "d", "", "chat", 5000, [
            _kv("gen_ai.operation.name", {"stringValue": "chat"}),
            _kv("gen_ai.input.messages", {"stringValue": '[{"role":"user","parts":[{"type":"text","content":"Hi"}]}]'})],
            events=[{"name": "exception", "attributes": [_kv("exception.message", {"stringValue": "rate limited"})]}]),
    ]}]}]}


def test_otlp_json_export_gives_one_trajectory_per_trace(tmp_path):
    name, records = _import(_write_json(tmp_path / "export.json", OTLP))
    assert name == "otel_genai" and len(records) == 2
    t1, t2 = (r.trajectory for r in records)
    assert (t1.system, t1.model, t1.title) == ("travel-desk", "m-1", "planner")
    assert [(s.kind, s.agent, s.parent) for s in t1.steps] == [
        ("event", "planner", None), ("message", "user", 0), ("tool_call", "planner", 0), ("tool_result", "planner", 0)]
    call, result = t1.steps[2], t1.steps[3]
    assert (call.call_id, result.call_id, call.link, call.tokens_in) == ("c1", "c1", 3, 40)
    assert result.content == "no rooms" and result.attributes["error"] == "booking failed"
    assert [(s.kind, s.content) for s in t2.steps] == [("message", "Hi"), ("error", "rate limited")]


def test_otlp_json_lines(tmp_path):
    doc = OTLP["resourceSpans"][0]
    lines = [{"resourceSpans": [{**doc, "scopeSpans": [{"spans": [sp]}]}]} for sp in doc["scopeSpans"][0]["spans"][:3]]
    name, [rec] = _import(_write_jsonl(tmp_path / "export.jsonl", lines))
    assert name == "otel_genai" and len(rec.trajectory.steps) == 4


def test_older_genai_forms(tmp_path):
    spans = [
        {"trace_id": "t", "span_id": "1", "parent_span_id": None, "name": "openai.chat", "start_time": 1, "end_time": 2,
         "attributes": {"gen_ai.system": "openai", "gen_ai.request.model": "gpt-x",
                        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
                        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Weather?",
                        "gen_ai.completion.0.role": "assistant",
                        "gen_ai.completion.0.tool_calls.0.id": "w1", "gen_ai.completion.0.tool_calls.0.name": "weather",
                        "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Oslo"}',
                        "gen_ai.usage.prompt_tokens": 12, "gen_ai.usage.completion_tokens": 3}},
        {"trace_id": "t", "span_id": "2", "parent_span_id": None, "name": "chat", "start_time": 3, "end_time": 4,
         "attributes": {"gen_ai.system": "openai"},
         "span_events": [
             {"name": "gen_ai.content.prompt", "attributes": {"gen_ai.prompt": '[{"role": "user", "content": "And tomorrow?"}]'}},
             {"name": "gen_ai.content.completion", "attributes": {"gen_ai.completion": '[{"role": "assistant", "content": "Rain."}]'}}]},
        {"trace_id": "t", "span_id": "3", "parent_span_id": None, "name": "chat", "start_time": 5, "end_time": 6,
         "attributes": {"gen_ai.system": "openai"},
         "span_events": [
             {"name": "gen_ai.user.message", "attributes": {"content": "Thanks"}},
             {"name": "gen_ai.choice", "attributes": {"index": 0, "message": {"role": "assistant", "content": "Welcome."}}}]},
    ]
    name, [rec] = _import(_write_json(tmp_path / "legacy.json", spans))
    assert name == "otel_genai"
    steps = rec.trajectory.steps
    assert [(s.kind, s.content) for s in steps] == [
        ("system", "Be brief."), ("message", "Weather?"), ("tool_call", 'weather({"city":"Oslo"})'),
        ("message", "And tomorrow?"), ("message", "Rain."), ("message", "Thanks"), ("message", "Welcome.")]
    assert (steps[2].tokens_in, steps[2].tokens_out, rec.trajectory.model) == (12, 3, "gpt-x")


def _claude_line(uuid, kind, message, **extra):
    return {"type": kind, "uuid": uuid, "parentUuid": None, "isSidechain": False, "sessionId": "s1",
            "timestamp": "2026-02-01T10:00:00Z", "version": "2.0.1", "message": message, **extra}


def test_claude_code_split_responses_and_sidechains(tmp_path):
    usage = {"input_tokens": 100, "output_tokens": 20}
    rows = [
        _claude_line("u1", "user", {"role": "user", "content": "Review the repo"}),
        _claude_line("u2", "user", {"role": "user", "content": [{"type": "text", "text": "<system-reminder>"}]}, isMeta=True),
        _claude_line("a1", "assistant", {"id": "msg_1", "role": "assistant", "model": "claude-x", "usage": usage,
                                         "content": [{"type": "thinking", "thinking": "Delegate the search."}]}),
        _claude_line("a2", "assistant", {"id": "msg_1", "role": "assistant", "model": "claude-x", "usage": usage,
                                         "content": [{"type": "tool_use", "id": "t1", "name": "Task",
                                                      "input": {"prompt": "find TODOs"}}]}),
        _claude_line("a3", "assistant", {"id": "msg_1", "role": "assistant", "model": "claude-x", "usage": usage,
                                         "content": [{"type": "tool_use", "id": "t1", "name": "Task",
                                                      "input": {"prompt": "find TODOs"}}]}),
        _claude_line("s1", "user", {"role": "user", "content": "find TODOs"}, isSidechain=True),
        _claude_line("s2", "assistant", {"id": "msg_2", "role": "assistant", "content": [{"type": "text", "text": "3 TODOs"}]},
                     isSidechain=True),
        _claude_line("u3", "user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                                  "content": [{"type": "text", "text": "3 TODOs"}],
                                                                  "is_error": False}]}),
        {"type": "file-history-snapshot", "messageId": "x", "snapshot": {}},
    ]
    name, [rec] = _import(_write_jsonl(tmp_path / "session.jsonl", rows))
    assert name == "claude_code"
    steps = rec.trajectory.steps
    assert [(s.kind, s.agent) for s in steps] == [
        ("message", "user"), ("system", "user"), ("thought", "claude"), ("tool_call", "claude"),
        ("message", "user"), ("message", "sidechain"), ("tool_result", "environment")]
    assert sum(s.tokens_in or 0 for s in steps) == 100  # one response over three lines: usage once
    assert steps[5].parent == 3 and steps[5].group == "sidechain"
    assert steps[3].link == 6 and steps[6].content == "3 TODOs"
    assert rec.trajectory.metadata["agents"] == ["claude", "sidechain"] and rec.warnings == []


def test_claude_stream_json_result_is_the_hidden_outcome(tmp_path):
    rows = [
        {"type": "system", "subtype": "init", "session_id": "s9", "model": "claude-y", "tools": ["Bash"]},
        {"type": "assistant", "session_id": "s9", "message": {"id": "m1", "role": "assistant",
                                                              "content": [{"type": "text", "text": "Trying."}]}},
        {"type": "result", "subtype": "error_max_turns", "is_error": True, "session_id": "s9", "num_turns": 30,
         "total_cost_usd": 0.4, "result": ""},
    ]
    name, [rec] = _import(_write_jsonl(tmp_path / "stream.jsonl", rows))
    traj = rec.trajectory
    assert name == "claude_code" and traj.model == "claude-y" and traj.outcome == "failure"
    assert traj.metadata[HIDDEN]["result"]["subtype"] == "error_max_turns"
    assert [s.kind for s in traj.steps] == ["system", "message"]


def test_codex_events_enrich_items(tmp_path):
    ts = "2026-01-01T00:00:00Z"
    rows = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "s", "cwd": "/w"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": "developer",
                                                              "content": [{"type": "input_text", "text": "rules"}]}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                              "arguments": '{"command":["false"]}', "call_id": "c"}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "exec_command_end", "call_id": "c", "exit_code": 1}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c",
                                                              "output": "failed"}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "token_count",
                                                          "info": {"last_token_usage": {"input_tokens": 9, "output_tokens": 2}}}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "error", "message": "stream disconnected"}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "brand_new_event"}},
    ]
    name, [rec] = _import(_write_jsonl(tmp_path / "rollout.jsonl", rows))
    steps = rec.trajectory.steps
    assert name == "codex_cli"
    assert [s.kind for s in steps] == ["system", "tool_call", "tool_result", "error", "event"]
    assert (steps[1].tokens_in, steps[1].tokens_out) == (9, 2)
    assert steps[2].attributes["exit_code"] == 1
    assert rec.warnings == ["unknown event of type 'event_msg/brand_new_event' kept as a generic step"]


def test_codex_exit_code_arriving_before_the_output_is_kept(tmp_path):
    ts = "2026-01-01T00:00:00Z"
    rows = [
        {"timestamp": ts, "type": "session_meta", "payload": {"id": "s"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                              "arguments": "{}", "call_id": "c"}},
        {"timestamp": ts, "type": "response_item", "payload": {"type": "function_call_output", "call_id": "c",
                                                              "output": "x"}},
        {"timestamp": ts, "type": "event_msg", "payload": {"type": "exec_command_end", "call_id": "c", "exit_code": 2}},
    ]
    _, [rec] = _import(_write_jsonl(tmp_path / "rollout.jsonl", rows))
    assert rec.trajectory.steps[1].attributes["exit_code"] == 2


def test_mini_swe_agent_v2_object(tmp_path):
    doc = {
        "info": {"exit_status": "LimitsExceeded", "submission": "", "mini_version": "1.9.0",
                 "model_stats": {"instance_cost": 0.2, "api_calls": 3},
                 "config": {"model": {"model_name": "claude-sonnet-4"}}},
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "THOUGHT: look around\n\n```mswea_bash_command\nls\n```",
             "extra": {"actions": [{"command": "ls"}], "cost": 0.01}},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\nsrc\n</output>", "extra": {"returncode": 0}},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "tc1", "type": "function",
                                                                 "function": {"name": "bash", "arguments": '{"command": "pytest"}'}}]},
            {"role": "tool", "tool_call_id": "tc1", "content": "<returncode>1</returncode>\n<output>1 failed</output>"},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }
    name, [rec] = _import(_write_json(tmp_path / "run.traj.json", doc))
    traj = rec.trajectory
    assert name == "mini_swe_agent"
    assert (traj.outcome, traj.model) == ("failure", "claude-sonnet-4")
    assert traj.metadata[HIDDEN] == {"exit_status": "LimitsExceeded", "submission": ""}
    assert [s.kind for s in traj.steps] == ["system", "message", "thought", "tool_call", "tool_result", "tool_call",
                                            "tool_result"]
    assert [s.attributes.get("exit_code") for s in traj.steps if s.kind == "tool_result"] == [0, 1]
    assert traj.steps[5].call_id == "tc1" and traj.steps[5].link == 6


def test_openhands_eval_output_jsonl(tmp_path):
    events = orjson.loads((Path(__file__).resolve().parents[2] / "shared" / "data" / "formats" / "openhands"
                           / "basic.json").read_bytes())
    rows = [{"instance_id": f"repo__{i}", "instruction": "Create the game", "history": events,
             "metrics": {"accumulated_cost": 0.1}, "error": None, "test_result": {"git_patch": "diff"}} for i in (1, 2)]
    name, records = _import(_write_jsonl(tmp_path / "output.jsonl", rows))
    assert name == "openhands" and len(records) == 2
    first = records[0].trajectory
    assert first.title == "repo__1" and first.task == "Create the game" and len(first.steps) == 5
    assert first.metadata[HIDDEN] == {"test_result": {"git_patch": "diff"}}
    assert records[0].trajectory.id != records[1].trajectory.id


def test_traces_of_other_instrumentation_are_left_out(tmp_path):
    http = _otlp_span("t9", "z", "", "GET /health", 10, [_kv("http.method", {"stringValue": "GET"})],
                      status={"code": 2})
    doc = {"resourceSpans": [{**OTLP["resourceSpans"][0], "scopeSpans": [
        {"spans": [*OTLP["resourceSpans"][0]["scopeSpans"][0]["spans"], http]}]}]}
    _, records = _import(_write_json(tmp_path / "export.json", doc))
    assert len(records) == 2
    assert records[0].ledger.dropped_by == {"span of a trace without LLM, tool or agent spans": 1}
    only_http = {"resourceSpans": [{"scopeSpans": [{"spans": [http]}]}]}
    f = _write_json(tmp_path / "http.json", only_http)
    f.write_bytes(f.read_bytes().replace(b'"http.method"', b'"gen_ai.system"'))
    with pytest.raises(ImportFailure, match="no LLM, tool or agent spans"):
        _import(f)


#: Serialised software-agent-sdk events (field names from openhands/sdk/event; values invented).
V1_EVENTS = orjson.loads((Path(__file__).parent / "fixtures" / "openhands_v1" / "events.json").read_bytes())


def test_openhands_v1_events(tmp_path):
    name, [rec] = _import(_write_json(tmp_path / "events.json", V1_EVENTS))
    steps = rec.trajectory.steps
    assert name == "openhands_v1"
    assert [s.kind for s in steps] == ["system", "message", "thought", "tool_call", "tool_result", "tool_call",
                                       "tool_result", "event", "thought", "final_answer"]
    assert (steps[3].content, steps[3].tool_args, steps[3].link) == ("renaming the file", '{"command": "mv a.py b.py"}', 4)
    assert steps[6].content == "rejected: dangerous" and steps[6].link == 5
    assert steps[-1].content == "Renamed a.py to b.py." and rec.trajectory.task == "Rename a.py"
    assert rec.warnings == ["unknown event of type 'HologramEvent' kept as a generic step"]
    name, [again] = _import(_write_jsonl(tmp_path / "events.jsonl", V1_EVENTS))
    assert name == "openhands_v1" and [s.kind for s in again.trajectory.steps] == [s.kind for s in steps]


def _inspect_log(samples: list) -> dict:
    return {"version": 2, "status": "success", "eval": {"task": "t", "model": "m/x", "run_id": "r"}, "samples": samples}


def test_inspect_agent_spans_name_agents_and_scores_decide_the_outcome(tmp_path):
    ts = "2026-01-01T00:00:00+00:00"
    out = {"choices": [{"message": {"id": "a1", "role": "assistant", "content": [
        {"type": "reasoning", "reasoning": "plan it"}, {"type": "text", "text": "done"}]}}],
        "usage": {"input_tokens": 5, "output_tokens": 1}}
    sample = {"id": "s1", "epoch": 2, "input": "do it", "target": "x", "scores": {"judge": {"value": 0.5}},
              "messages": [], "events": [
                  {"event": "span_begin", "id": "sp1", "type": "agent", "name": "researcher", "timestamp": ts},
                  {"event": "model", "span_id": "sp1", "timestamp": ts, "input": [
                      {"id": "u1", "role": "user", "content": "do it"}], "output": out},
                  {"event": "tool", "span_id": "sp1", "timestamp": ts, "id": "c9", "function": "search",
                   "arguments": {"q": "x"}, "result": "", "error": {"type": "timeout", "message": "took too long"}},
                  {"event": "sample_limit", "timestamp": ts, "type": "token", "message": "limit of 100"},
                  {"event": "score", "timestamp": ts, "score": {"value": 0.5}}]}
    fallback = {"id": "s2", "epoch": 1, "input": [{"role": "user", "content": "hi"}], "error": {"message": "boom"},
                "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    name, records = _import(_write_json(tmp_path / "log.json", _inspect_log([sample, fallback])))
    first, second = (r.trajectory for r in records)
    assert name == "inspect_ai"
    assert [(s.kind, s.agent) for s in first.steps] == [
        ("message", "user"), ("thought", "researcher"), ("message", "researcher"), ("tool_call", "researcher"),
        ("tool_result", "researcher"), ("error", None)]
    assert first.steps[4].content == '{\n  "type": "timeout",\n  "message": "took too long"\n}'
    assert first.steps[5].content == "limit reached (token): limit of 100"
    assert (first.outcome, first.score, first.metadata["epoch"]) == ("failure", 0.5, 2)
    assert first.title == "t #s1 epoch 2" and first.steps[1].tokens_in == 5
    assert [s.content for s in second.steps] == ["hi", "hello"] and second.outcome == "failure"
    assert second.task == "hi" and second.metadata[HIDDEN]["error"] == {"message": "boom"}
