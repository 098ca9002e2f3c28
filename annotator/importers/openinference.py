"""OpenInference spans (Arize Phoenix, and instrumentations such as smolagents').

Messages are flattened into indexed keys (``llm.input_messages.1.message.tool_calls.0.
tool_call.function.name``); they are rebuilt by index into the parts form of :mod:`spans`.
``openinference.span.kind`` says what a span is: LLM and TOOL spans give steps, AGENT spans
give the agent context, CHAIN spans (smolagents' ``Step N``) only a group; retrievers,
rerankers, guardrails and the like become ``event`` steps so nothing is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text
from annotator.importers.detect import Head
from annotator.importers.media import uri_text
from annotator.importers.span_files import Span, indexed_rows, ordered, sniff_attribute_keys
from annotator.importers.spans import AGENT, CHAIN, EVENT, LLM, TOOL, Convention, span_records
from annotator.importers.steps import as_int, obj, parse_json_maybe

_KINDS = {"LLM": LLM, "TOOL": TOOL, "AGENT": AGENT, "CHAIN": CHAIN}
_MSG = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")


def _tool_call(tc: dict) -> dict:
    fn = obj(tc.get("function"))
    return {"type": "tool_call", "id": tc.get("id"), "name": fn.get("name"),
            "arguments": parse_json_maybe(fn.get("arguments", fn.get("arguments_json")))}


def _content_part(mc: dict) -> dict | None:
    """One ``message.contents.N.message_content``: text, reasoning, a tool use or an image."""
    ctype = mc.get("type")
    if ctype == "tool_use":
        return _tool_call(obj(mc.get("tool_call")) or mc)
    if ctype == "image" or "image" in mc:
        url = obj(obj(mc.get("image")).get("image")).get("url")
        return {"type": "text", "content": uri_text(url) if isinstance(url, str) else "[image]"}
    if mc.get("text") is not None:
        return {"type": "reasoning" if ctype == "reasoning" else "text", "content": mc["text"]}
    return None


def _message(m: dict) -> dict:
    role = m.get("role") or "user"
    parts: list[dict] = []
    content = m.get("content")
    if isinstance(content, dict):  # ``message.content.0``, ``.1``: the text in pieces
        content = "\n".join(as_text(t) for t in ordered(content))
    if content not in (None, ""):
        if m.get("tool_call_id") is not None:
            parts.append({"type": "tool_call_response", "id": str(m["tool_call_id"]), "response": content})
        else:
            parts.append({"type": "text", "content": content})
    for c in ordered(m.get("contents")):
        part = _content_part(obj(obj(c).get("message_content")))
        if part is not None:
            parts.append(part)
    for c in ordered(m.get("tool_calls")):
        parts.append(_tool_call(obj(obj(c).get("tool_call"))))
    return {"role": role, "parts": parts}


def _messages(attrs: dict, which: str) -> list[dict]:
    return [_message(row) for row in indexed_rows(attrs, _MSG, which)]


class OpenInferenceConvention(Convention):
    def kind(self, span: Span) -> str:
        raw = span.attributes.get("openinference.span.kind")
        if raw is None:
            return "other"
        return _KINDS.get(str(raw).upper(), EVENT)

    def agent_name(self, span: Span) -> str | None:
        name = span.attributes.get("agent.name") or span.attributes.get("graph.node.name")
        if name:
            return str(name)
        return span.name.removesuffix(".run") or None

    def input_messages(self, span: Span) -> list[dict]:
        msgs = _messages(span.attributes, "input")
        value = span.attributes.get("input.value")
        if not msgs and self.kind(span) == AGENT and isinstance(value, str) and \
                span.attributes.get("input.mime_type") in (None, "text/plain") and value[:1] not in ("{", "["):
            msgs = [{"role": "user", "parts": [{"type": "text", "content": value}]}]  # the prompt of a query
        return msgs

    def output_messages(self, span: Span) -> list[dict]:
        msgs = _messages(span.attributes, "output")
        if not msgs and span.attributes.get("output.value") is not None:
            msgs = [{"role": "assistant", "parts": [{"type": "text", "content": span.attributes["output.value"]}]}]
        return msgs

    def tool(self, span: Span) -> tuple[str | None, object, object, str | None]:
        a = span.attributes
        call_id = a.get("tool_call.id") or a.get("tool.id")
        args = a.get("tool_call.function.arguments", a.get("input.value"))
        return (a.get("tool.name") or a.get("tool_call.function.name") or span.name, args,
                a.get("output.value"), str(call_id) if call_id else None)

    def model(self, span: Span) -> str | None:
        return span.attributes.get("llm.model_name")

    def tokens(self, span: Span) -> tuple[int | None, int | None]:
        a = span.attributes
        return as_int(a.get("llm.token_count.prompt")), as_int(a.get("llm.token_count.completion"))


class OpenInference(Importer):
    name = "openinference"
    description = "OpenInference (Arize Phoenix) spans: OTLP/JSON, span lists or one span's attributes"

    def sniff(self, head: Head) -> bool:
        return "openinference.span.kind" in sniff_attribute_keys(head)

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        yield from span_records(path, opts, self.name, OpenInferenceConvention())
