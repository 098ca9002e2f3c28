"""Span files read into :class:`Span` objects, whatever container they use.

OpenTelemetry GenAI and OpenInference spans ship in the same containers: an OTLP/JSON export
(``resourceSpans``, one object or one per line, attribute values as ``AnyValue``), a
flattened list of span dicts, that list wrapped as ``{session_id, span_count, spans}`` (AWS
ADOT / Bedrock AgentCore session exports), or the bare attribute map of one span. Conventions also flatten
message lists into indexed keys; :func:`indexed_rows` nests them back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from annotator.errors import ImportFailure
from annotator.importers.base import ImportOptions
from annotator.importers.detect import Head
from annotator.importers.reading import json_lines, load_json
from annotator.importers.steps import as_int, obj, parse_json_maybe, parse_time, seq, str_or_none


@dataclass
class Span:
    """One span, whatever container it came in; attribute values decoded to plain Python."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    attributes: dict
    events: list = field(default_factory=list)
    error: str | None = None
    resource: dict = field(default_factory=dict)
    raw: object = None


# ---------------------------------------------------------------- containers


def sniff_attribute_keys(head: Head) -> set[str]:
    """Attribute keys a span file shows in its head, in any container (empty if not spans)."""
    if head.kind == "jsonl":
        first = head.lines[0] if head.lines else None
        if isinstance(first, dict) and ("resourceSpans" in first or "resource_spans" in first):
            return _otlp_keys(first)
        return set()
    if head.kind != "json":
        return set()
    root = head.keys("")
    if "resourceSpans" in root or "resource_spans" in root:
        return head.attribute_keys
    if head.root == "array" and {"span_id", "attributes"} <= head.keys("item"):
        return head.keys("item.attributes")
    if head.root == "object" and {"span_id", "attributes"} <= head.keys("spans.item"):
        return head.keys("spans.item.attributes")
    if head.root == "object" and not root & {"spans", "resourceLogs", "resource_logs"}:
        return root  # a single span's attribute map
    return set()


def _otlp_keys(doc: dict) -> set[str]:
    return {k for sp, _ in _otlp_raw_spans(doc) for k in otlp_attributes(sp.get("attributes"))}


def _otlp_raw_spans(doc: dict) -> Iterator[tuple[dict, dict]]:
    """(span, resource attributes) for every span object of an OTLP/JSON document."""
    for rs in seq(doc.get("resourceSpans") or doc.get("resource_spans")):
        rs = obj(rs)
        resource = otlp_attributes(obj(rs.get("resource")).get("attributes"))
        for ss in seq(rs.get("scopeSpans") or rs.get("scope_spans")):
            for sp in seq(obj(ss).get("spans")):
                if isinstance(sp, dict):
                    yield sp, resource


def read_spans(path: Path, opts: ImportOptions) -> list[Span]:
    """Every span in the file, from whichever container it uses."""
    lines = json_lines(path, opts)
    if lines is not None:
        spans: list[Span] = []
        for lineno, doc in lines:
            if not isinstance(doc, dict):
                raise ImportFailure(str(path), "expected an OTLP/JSON object", where=f"line {lineno}")
            spans.extend(_otlp_spans(doc))
        return spans
    data = load_json(path)
    if isinstance(data, dict) and ("resourceSpans" in data or "resource_spans" in data):
        return _otlp_spans(data)
    if isinstance(data, dict) and isinstance(data.get("spans"), list):  # a session export wrapping a span list
        data = data["spans"]
    if isinstance(data, list):
        return [_flat_span(path, i, item) for i, item in enumerate(data)]
    if isinstance(data, dict):
        attrs = {k: parse_json_maybe(v) if k.endswith("messages") else v for k, v in data.items()}
        return [Span(trace_id=path.stem, span_id="span", parent_id=None, name=path.stem, start=0, end=0,
                     attributes=attrs, raw=data)]
    raise ImportFailure(str(path), "expected span data (OTLP/JSON, a span list or an attribute map)")


def _any_value(v: object) -> object:
    """Decode an OTLP AnyValue (``{"stringValue": ...}`` and friends)."""
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return as_int(v["intValue"])
    if "arrayValue" in v:
        return [_any_value(x) for x in seq(obj(v["arrayValue"]).get("values"))]
    if "kvlistValue" in v:
        return otlp_attributes(obj(v["kvlistValue"]).get("values"))
    return None


def otlp_attributes(items: object) -> dict:
    """Attributes as a plain dict, from an OTLP ``[{key, value: AnyValue}]`` list or a dict."""
    if isinstance(items, dict):
        return dict(items)
    out: dict = {}
    for kv in seq(items):
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = _any_value(kv.get("value"))
    return out


def _status_error(status: object, attributes: dict) -> str | None:
    """A failed span's error text: the status message, else the ``error.type`` attribute."""
    if not isinstance(status, dict):
        return None
    code = status.get("code", status.get("status_code"))
    if code in (2, "2", "ERROR", "STATUS_CODE_ERROR"):
        return str(status.get("message") or status.get("description") or attributes.get("error.type") or "error")
    return None


def _exception(events: object) -> str | None:
    """The message of a span's ``exception`` event, if it has one."""
    for e in seq(events):
        if isinstance(e, dict) and e.get("name") == "exception":
            attrs = otlp_attributes(e.get("attributes"))
            return str(attrs.get("exception.message") or attrs.get("exception.type") or "exception")
    return None


def _otlp_spans(doc: dict) -> list[Span]:
    return [
        Span(
            trace_id=str(sp.get("traceId") or sp.get("trace_id") or ""),
            span_id=str(sp.get("spanId") or sp.get("span_id") or ""),
            parent_id=str_or_none(sp.get("parentSpanId") or sp.get("parent_span_id")) or None,
            name=str(sp.get("name") or ""),
            start=as_int(sp.get("startTimeUnixNano")) or 0,
            end=as_int(sp.get("endTimeUnixNano")) or 0,
            attributes=(attrs := otlp_attributes(sp.get("attributes"))),
            events=_events(sp.get("events")),
            error=_status_error(sp.get("status"), attrs) or _exception(sp.get("events")),
            resource=resource,
            raw=sp,
        )
        for sp, resource in _otlp_raw_spans(doc)
    ]


def _events(events: object) -> list[dict]:
    return [{"name": str_or_none(e.get("name") or e.get("event_name")), "attributes": otlp_attributes(e.get("attributes")),
             "time": e.get("timeUnixNano") or e.get("timestamp") or e.get("time")}
            for e in seq(events) if isinstance(e, dict)]


def _flat_span(path: Path, i: int, item: object) -> Span:
    if not isinstance(item, dict) or "span_id" not in item:
        raise ImportFailure(str(path), "not a span (needs 'span_id')", where=f"record {i + 1}")
    events = _events(item.get("span_events") or item.get("events"))
    return Span(
        trace_id=str(item.get("trace_id") or ""),
        span_id=str(item["span_id"]),
        parent_id=str_or_none(item.get("parent_span_id") or item.get("parent_id")) or None,
        name=str(item.get("name") or ""),
        start=_ns(item.get("start_time")),
        end=_ns(item.get("end_time")),
        attributes=obj(item.get("attributes")),
        events=events,
        error=_status_error(item.get("status"), obj(item.get("attributes"))) or _exception(
            item.get("span_events") or item.get("events")),
        resource=obj(item.get("resource")),
        raw=item,
    )


def _ns(value: object) -> int:
    n = as_int(value)
    if n is not None:
        return n
    dt = parse_time(value)
    return int(dt.timestamp() * 1e9) if dt else 0


# ---------------------------------------------------------------- flattened attributes


def _nest(flat: dict[str, object]) -> dict:
    """``{"a.0.b": v}`` -> ``{"a": {0: {"b": v}}}`` (numeric segments become int keys)."""
    root: dict = {}
    for key, value in flat.items():
        node = root
        segs = [int(s) if s.isdecimal() else s for s in key.split(".")]
        for seg in segs[:-1]:
            nxt = node.get(seg)
            if not isinstance(nxt, dict):
                nxt = node[seg] = {}
            node = nxt
        node[segs[-1]] = value
    return root


def ordered(node: object) -> list:
    """The values of a nested node's integer keys, in index order."""
    return [node[k] for k in sorted(k for k in node if isinstance(k, int))] if isinstance(node, dict) else []


def indexed_rows(attrs: dict, pattern: re.Pattern, which: str) -> list[dict]:
    """Messages flattened into indexed keys, nested back by index.

    ``pattern`` matches a key as (which, index, rest): ``llm.input_messages.0.message.role``
    or ``gen_ai.prompt.0.role``; the result has one nested dict per index, in order.
    """
    rows: dict[int, dict] = {}
    for key, value in attrs.items():
        m = pattern.match(key) if isinstance(key, str) else None
        if m and m.group(1) == which:
            rows.setdefault(int(m.group(2)), {})[m.group(3)] = value
    return [_nest(rows[i]) for i in sorted(rows)]
