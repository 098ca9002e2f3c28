"""Random and mutated JSON fed to detection and to every registered importer: only ImportFailure.

The importers are taken from ``registry()``, so a format added later is covered without
touching this file. Structured inputs are built around the keys the formats sniff for, so
that the readers get past their first checks and meet wrong types deep inside.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotator.errors import ImportFailure
from annotator.importers.base import ImportOptions
from annotator.importers.registry import detect, registry

KEYS = [
    "history", "mistake_agent", "mistake_step", "mistake_reason", "is_correct", "is_corrected", "question",
    "question_ID", "mas_name", "llm_name", "benchmark_name", "trace_id", "trace", "trajectory",
    "mast_annotation", "round", "annotations", "failure mode", "annotator_1", "annotator_2", "annotator_3",
    "messages", "role", "content", "name", "tool_calls", "tool_call_id", "function", "arguments", "id",
    "instance_id", "problem_statement", "other_data", "correct", "note", "run_id", "prompt", "log_file",
    "steps", "kind", "type", "outcome", "score", "model", "system", "title", "task", "text", "source",
    "resourceSpans", "spans", "attributes", "payload", "timestamp", "sessionId", "uuid", "message",
    "action", "observation", "info", "environment", "events", "samples", "eval", "version", "1.1", "3.2",
    "thread_id", "item", "usage", "error", "command", "aggregated_output", "exit_code", "status", "changes",
]
ROLES = ["system", "user", "assistant", "tool", "function", "Orchestrator (-> WebSurfer)", "human"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
    st.text(max_size=30), st.sampled_from(ROLES + ["1.1 Step repetition", "Round 1", "0", "12", "yes"]),
)
json_values = st.recursive(
    scalars,
    lambda kids: st.one_of(
        st.lists(kids, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), kids, max_size=8),
    ),
    max_leaves=40,
)
roles = st.one_of(st.sampled_from(ROLES), json_values)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": roles, "content": json_values},
        optional={"name": json_values, "tool_calls": st.one_of(json_values, st.lists(
            st.fixed_dictionaries({"id": json_values, "function": st.one_of(json_values, st.fixed_dictionaries(
                {"name": json_values, "arguments": json_values}))}), max_size=2)),
            "tool_call_id": json_values, "function_call": json_values, "reasoning_content": json_values},
    ),
    max_size=5,
)
#: Near-valid skeletons of each format with random values inside.
skeletons = st.one_of(
    st.fixed_dictionaries({"history": st.one_of(messages, json_values), "mistake_agent": json_values,
                           "mistake_step": json_values},
                          optional={"is_correct": json_values, "question": json_values, "question_ID": json_values}),
    st.lists(st.fixed_dictionaries({"mas_name": json_values, "trace": st.one_of(
        json_values, st.fixed_dictionaries({"trajectory": st.one_of(json_values, st.text(max_size=200))})),
        "mast_annotation": st.dictionaries(st.sampled_from(["1.1", "2.3", "FM-3.2", "9.9"]), json_values)},
        optional={"llm_name": json_values, "benchmark_name": json_values, "trace_id": json_values}), max_size=3),
    st.lists(st.fixed_dictionaries({"round": json_values, "trace": st.one_of(json_values, st.text(max_size=200)),
        "annotations": st.one_of(json_values, st.lists(st.fixed_dictionaries(
            {"failure mode": st.one_of(st.sampled_from(["1.1 Poor", "4.2 Lack", "x"]), json_values)},
            optional={"annotator_1": json_values, "annotator_2": json_values}), max_size=3))},
        optional={"mas_name": json_values}), max_size=3),
    messages,
    st.fixed_dictionaries({"messages": st.one_of(messages, json_values)}, optional={"model": json_values}),
    st.fixed_dictionaries({"instance_id": json_values, "problem_statement": json_values,
                           "trajectory": st.one_of(messages, json_values, st.lists(st.text(max_size=40)))},
                          optional={"other_data": json_values, "note": json_values}),
    st.lists(st.fixed_dictionaries({"steps": st.one_of(json_values, st.lists(json_values, max_size=4))},
                                   optional={"id": json_values, "outcome": json_values, "score": json_values,
                                             "system": json_values}), min_size=2, max_size=3),
)
#: ``codex exec --json`` events: a thread, items of every type with random fields, turns.
exec_events = st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("thread.started"), "thread_id": json_values}),
    st.fixed_dictionaries({"type": st.sampled_from(["item.started", "item.updated", "item.completed"]),
                           "item": st.one_of(json_values, st.fixed_dictionaries(
                               {"id": st.one_of(st.sampled_from(["item_0", "item_1"]), json_values),
                                "type": st.one_of(st.sampled_from(
                                    ["agent_message", "reasoning", "command_execution", "file_change", "mcp_tool_call",
                                     "collab_tool_call", "web_search", "todo_list", "plan", "error"]), json_values)},
                               optional={k: json_values for k in ("text", "command", "aggregated_output", "exit_code",
                                                                  "status", "changes", "result", "error", "items",
                                                                  "arguments", "agents_states", "action")}))}),
    st.fixed_dictionaries({"type": st.sampled_from(["turn.completed", "turn.failed", "error", "turn.started"])},
                          optional={"usage": json_values, "error": json_values, "message": json_values}),
), min_size=2, max_size=6)
documents = st.one_of(json_values, st.lists(json_values, max_size=4), skeletons, exec_events)


def _dumps(value: object) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # integers beyond 64 bits: write them as JSON text anyway
        return json.dumps(value).encode()


@st.composite
def files(draw) -> bytes:
    doc = draw(documents)
    shape = draw(st.sampled_from(["json", "jsonl", "mutated", "text"]))
    if shape == "jsonl" and isinstance(doc, list):
        data = b"\n".join(_dumps(v) for v in doc) + b"\n"
    elif shape == "text":
        data = draw(st.text(max_size=300)).encode("utf-8", "surrogatepass")
    else:
        data = _dumps(doc)
    if shape == "mutated":
        for _ in range(draw(st.integers(1, 4))):
            if not data:
                break
            pos = draw(st.integers(0, len(data) - 1))
            op = draw(st.sampled_from(["flip", "cut", "insert"]))
            if op == "flip":
                data = data[:pos] + bytes([draw(st.integers(0, 255))]) + data[pos + 1 :]
            elif op == "cut":
                data = data[:pos]
            else:
                data = data[:pos] + draw(st.sampled_from([b"{", b"]", b",", b'"', b"\xff", b"\x00", b"\n"])) + data[pos:]
    return data


def _only_import_failures(fn) -> None:
    """Run ``fn``; an ImportFailure is an accepted answer, any other exception fails the test."""
    try:
        fn()
    except ImportFailure as exc:
        assert str(exc).startswith(exc.path) and "\n" not in exc.reason


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=files(), suffix=st.sampled_from([".json", ".jsonl", ".log", ""]))
def test_detect_and_every_importer_raise_only_import_failure(data: bytes, suffix: str):
    opts = ImportOptions(max_bytes=1024**2)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"input{suffix}"
        path.write_bytes(data)
        _only_import_failures(lambda: detect(path, opts))
        for importer in registry().values():
            _only_import_failures(lambda imp=importer: list(imp.read(path, ImportOptions(max_bytes=1024**2))))
            _only_import_failures(
                lambda imp=importer: list(imp.read(path, ImportOptions(max_bytes=1024**2, skip_bad_lines=True)))
            )
