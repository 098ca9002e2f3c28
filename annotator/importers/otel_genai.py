"""OpenTelemetry GenAI semantic-convention spans (``gen_ai.*``), current and older forms.

Current spans carry ``gen_ai.operation.name`` and parts-based ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (JSON strings in flattened exports). Older exports still found in
the wild put the messages in span events (``gen_ai.content.prompt`` / ``.completion`` with a
``gen_ai.prompt`` / ``gen_ai.completion`` attribute; per-message ``gen_ai.user.message`` ...
``gen_ai.choice`` events) or in OpenLLMetry's indexed keys (``gen_ai.prompt.0.role``). All of
them are normalised to the parts form the span walker in :mod:`spans` understands.

Instrumentations that record content as a log-like span event carry the messages in the
``gen_ai.client.inference.operation.details`` event's attributes instead of on the span.
Google ADK records each model call on a ``call_llm`` span as JSON of its request and response
(``gcp.vertex.agent.llm_request`` / ``llm_response``: Gemini ``contents`` of ``parts``), and a
tool's arguments and result as ``gcp.vertex.agent.tool_call_args`` / ``tool_response``; its
``generate_content`` child span repeats the call without content and shows nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from annotator.importers.base import ImportedRecord, Importer, ImportOptions
from annotator.importers.detect import Head
from annotator.importers.media import media_text
from annotator.importers.span_files import Span, indexed_rows, ordered, sniff_attribute_keys
from annotator.importers.spans import AGENT, CHAIN, LLM, OTHER, TOOL, Convention, span_records
from annotator.importers.steps import as_int, obj, parse_json_maybe, seq, str_or_none

_LLM_OPS = {"chat", "text_completion", "generate_content"}
_AGENT_OPS = {"invoke_agent", "create_agent"}
_MESSAGE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                   "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}
_INDEXED = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_ADK_REQUEST, _ADK_RESPONSE = "gcp.vertex.agent.llm_request", "gcp.vertex.agent.llm_response"


def _gemini_part(part: dict) -> dict | None:
    """A Gemini ``Part`` (``text``, ``function_call``, ``function_response``, ``inline_data``) in
    the parts form."""
    call = part.get("function_call") or part.get("functionCall")
    if isinstance(call, dict):
        return {"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": call.get("args")}
    response = part.get("function_response") or part.get("functionResponse")
    if isinstance(response, dict):
        return {"type": "tool_call_response", "id": response.get("id"), "response": response.get("response")}
    if isinstance(part.get("text"), str):
        return {"type": "reasoning" if part.get("thought") else "text", "content": part["text"]}
    media = media_text(part)
    return {"type": "text", "content": media} if media is not None else None


def _gemini_messages(contents: object) -> list[dict]:
    """Gemini ``Content`` objects (role ``user`` / ``model``) as messages."""
    out = []
    for c in seq(contents):
        if isinstance(c, dict):
            parts = [p for p in (_gemini_part(obj(x)) for x in seq(c.get("parts"))) if p is not None]
            out.append({"role": "assistant" if c.get("role") == "model" else c.get("role") or "user", "parts": parts})
    return out


def _adk(span: Span, key: str) -> dict:
    value = parse_json_maybe(span.attributes.get(key))
    return value if isinstance(value, dict) else {}


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
        if op is None and _adk(span, _ADK_REQUEST).get("contents"):
            return LLM
        if op in _LLM_OPS and not self._messages_of(span) and a.get("gcp.vertex.agent.event_id"):
            return OTHER  # ADK's generate_content: the call_llm span around it holds the content
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

    def _messages_of(self, span: Span) -> dict:
        """The span's message attributes: on the span, else in its operation-details event."""
        a = span.attributes
        if "gen_ai.input.messages" in a or "gen_ai.output.messages" in a:
            return a
        return next((e["attributes"] for e in span.events if e["name"] == _DETAILS_EVENT), {})

    def input_messages(self, span: Span) -> list[dict]:
        a = self._messages_of(span)
        if "gen_ai.input.messages" in a:
            msgs = _messages(a["gen_ai.input.messages"], "user")
            system = a.get("gen_ai.system_instructions", span.attributes.get("gen_ai.system_instructions"))
            if isinstance(system, str):
                msgs.insert(0, {"role": "system", "parts": [{"type": "text", "content": system}]})
            return msgs
        request = _adk(span, _ADK_REQUEST)
        if request.get("contents"):
            system = obj(request.get("config")).get("system_instruction")
            head = [{"role": "system", "parts": [{"type": "text", "content": system}]}] if isinstance(system, str) else []
            return head + _gemini_messages(request["contents"])
        return self._legacy(span, "prompt")

    def output_messages(self, span: Span) -> list[dict]:
        a = self._messages_of(span)
        if "gen_ai.output.messages" in a:
            return _messages(a["gen_ai.output.messages"], "assistant")
        response = _adk(span, _ADK_RESPONSE)
        if isinstance(response.get("content"), dict):
            return _gemini_messages([response["content"]])
        return self._legacy(span, "completion")

    def tool(self, span: Span) -> tuple[str | None, object, object, str | None]:
        a = span.attributes
        return (a.get("gen_ai.tool.name") or span.name,
                a.get("gen_ai.tool.call.arguments", a.get("gcp.vertex.agent.tool_call_args")),
                a.get("gen_ai.tool.call.result", a.get("gcp.vertex.agent.tool_response")), a.get("gen_ai.tool.call.id"))

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
