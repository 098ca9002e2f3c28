"""OpenTelemetry GenAI semantic-convention spans (``gen_ai.*``), current and older forms.

Current spans carry ``gen_ai.operation.name`` and parts-based ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (JSON strings in flattened exports). Older exports still found in
the wild put the messages in span events (``gen_ai.content.prompt`` / ``.completion`` with a
``gen_ai.prompt`` / ``gen_ai.completion`` attribute; per-message ``gen_ai.user.message`` ...
``gen_ai.choice`` events) or in OpenLLMetry's indexed keys (``gen_ai.prompt.0.role``). All of
them are normalised to the parts form the span walker in :mod:`spans` understands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from annotator.importers.base import ImportedRecord, Importer, ImportOptions
from annotator.importers.detect import Head
from annotator.importers.span_files import Span, indexed_rows, ordered, sniff_attribute_keys
from annotator.importers.spans import AGENT, CHAIN, LLM, OTHER, TOOL, Convention, span_records
from annotator.importers.steps import as_int, obj, parse_json_maybe, seq, str_or_none

_LLM_OPS = {"chat", "text_completion", "generate_content"}
_AGENT_OPS = {"invoke_agent", "create_agent"}
_MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                   "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")


def _parts(msg: dict) -> list[dict]:
    """Parts of a message in any GenAI shape: ``parts``, ``content`` or ``tool_calls``."""
    if isinstance(msg.get("parts"), list):
        return msg["parts"]
    parts: list[dict] = []
    content = msg.get("content")
    if content not in (None, ""):
        if msg.get("role") == "tool" or msg.get("tool_call_id"):
            parts.append({"type": "tool_call_response", "id": msg.get("tool_call_id") or msg.get("id"),
                          "response": content})
        else:
            parts.append({"type": "text", "content": content})
    for call in seq(msg.get("tool_calls")):
        if isinstance(call, dict):
            fn = obj(call.get("function")) or call
            parts.append({"type": "tool_call", "id": call.get("id"), "name": fn.get("name"),
                          "arguments": parse_json_maybe(fn.get("arguments"))})
    return parts


def _messages(value: object, default_role: str) -> list[dict]:
    value = parse_json_maybe(value)
    if isinstance(value, dict):
        value = value.get("messages") or value.get("choices") or [value]
    if isinstance(value, str):
        return [{"role": default_role, "parts": [{"type": "text", "content": value}]}]
    out = []
    for m in seq(value):
        if isinstance(m, dict):
            m = m.get("message") if isinstance(m.get("message"), dict) else m
            out.append({"role": m.get("role") or default_role, "parts": _parts(m)})
    return out


def _indexed(attrs: dict, which: str) -> list[dict]:
    """OpenLLMetry's ``gen_ai.prompt.N.role`` / ``.content`` / ``.tool_calls.M.name`` keys."""
    out = []
    for row in indexed_rows(attrs, _INDEXED, which):
        msg = {**row, "tool_calls": ordered(row.get("tool_calls"))}
        out.append({"role": row.get("role") or ("user" if which == "prompt" else "assistant"), "parts": _parts(msg)})
    return out


class GenAIConvention(Convention):
    def kind(self, span: Span) -> str:
        a = span.attributes
        op = str_or_none(a.get("gen_ai.operation.name"))
        if op in _LLM_OPS or op is None and (self._legacy(span, "prompt") or self._legacy(span, "completion")):
            return LLM
        if op == "execute_tool" or op is None and a.get("gen_ai.tool.name"):
            return TOOL
        if op in _AGENT_OPS or op is None and a.get("gen_ai.agent.name"):
            return AGENT
        if op == "invoke_workflow":
            return CHAIN
        return OTHER

    def _legacy(self, span: Span, which: str) -> list[dict]:
        a = span.attributes
        if which == "prompt":
            msgs = [{"role": "system", "parts": [{"type": "text", "content": a["gen_ai.system_instructions"]}]}] \
                if isinstance(a.get("gen_ai.system_instructions"), str) else []
        else:
            msgs = []
        msgs += _indexed(a, which)
        for e in span.events:
            ea = e["attributes"]
            name = e["name"]
            if name == f"gen_ai.content.{which}" and f"gen_ai.{which}" in ea:
                msgs += _messages(ea[f"gen_ai.{which}"], "user" if which == "prompt" else "assistant")
            elif which == "prompt" and name in _MESSAGE_EVENTS:
                msgs += _messages([{"role": _MESSAGE_EVENTS[name], **ea}], _MESSAGE_EVENTS[name])
            elif which == "completion" and name == "gen_ai.choice":
                msgs += _messages([ea.get("message", ea)], "assistant")
        return msgs

    def agent_name(self, span: Span) -> str | None:
        name = span.attributes.get("gen_ai.agent.name")
        return str(name) if name else None

    def input_messages(self, span: Span) -> list[dict]:
        a = span.attributes
        if "gen_ai.input.messages" in a:
            msgs = _messages(a["gen_ai.input.messages"], "user")
            if isinstance(a.get("gen_ai.system_instructions"), str):
                msgs.insert(0, {"role": "system", "parts": [{"type": "text", "content": a["gen_ai.system_instructions"]}]})
            return msgs
        return self._legacy(span, "prompt")

    def output_messages(self, span: Span) -> list[dict]:
        a = span.attributes
        if "gen_ai.output.messages" in a:
            return _messages(a["gen_ai.output.messages"], "assistant")
        return self._legacy(span, "completion")

    def tool(self, span: Span) -> tuple[str | None, object, object, str | None]:
        a = span.attributes
        return (a.get("gen_ai.tool.name") or span.name, a.get("gen_ai.tool.call.arguments"),
                a.get("gen_ai.tool.call.result"), a.get("gen_ai.tool.call.id"))

    def model(self, span: Span) -> str | None:
        a = span.attributes
        return a.get("gen_ai.response.model") or a.get("gen_ai.request.model")

    def tokens(self, span: Span) -> tuple[int | None, int | None]:
        a = span.attributes
        return (as_int(a.get("gen_ai.usage.input_tokens", a.get("gen_ai.usage.prompt_tokens"))),
                as_int(a.get("gen_ai.usage.output_tokens", a.get("gen_ai.usage.completion_tokens"))))


def is_genai(keys: set[str]) -> bool:
    return any(k.startswith("gen_ai.") for k in keys)


class OtelGenAI(Importer):
    name = "otel_genai"
    description = "OpenTelemetry GenAI spans (gen_ai.*): OTLP/JSON, span lists or one span's attributes"

    def sniff(self, head: Head) -> bool:
        keys = sniff_attribute_keys(head)
        return is_genai(keys) and "openinference.span.kind" not in keys

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        yield from span_records(path, opts, self.name, GenAIConvention())
