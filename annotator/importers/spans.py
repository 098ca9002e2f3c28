"""Span traces (OpenTelemetry GenAI, OpenInference) turned into replayable steps.

Both conventions share the containers read by :mod:`span_files` and differ only in attribute
names. This module orders a trace's spans and turns them into steps; a :class:`Convention`
(one per format module) says what a span is and which messages, tool call or agent it carries.

Steps are emitted in time order across the whole trace (a coordinator's tool call, then the
sub-agent it started, then the tool's result), not depth-first, because that is the order an
annotator replays. The span tree survives in ``Step.parent``: the index of the step of the
nearest enclosing agent span (or of a tool span that emitted its own call).

An agent span can carry the conversation itself (``invoke_agent`` with ``gen_ai.input.messages``
/ ``gen_ai.output.messages``; the Claude Agent SDK's query span with ``input.value`` and
``llm.output_messages``): its input shows when the agent starts, and its output messages are
held until they are due, each one up to a tool call shown just before the tool span that ran
the call, the rest when the agent ends. A message already shown by an LLM span is not repeated.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, ImportOptions, as_text, finish, stable_id
from annotator.importers.span_files import Span, read_spans
from annotator.importers.steps import StepList, json_text, parse_time, plain, seq, str_or_none
from annotator.models import Step, Trajectory

#: What a span is, as far as steps go.
LLM, TOOL, AGENT, CHAIN, EVENT, OTHER = "llm", "tool", "agent", "chain", "event", "other"
#: Input roles shown as steps in a multi-span trace; other inputs repeat earlier steps.
_CONTEXT_ROLES = {"system", "user", "developer", "human"}


class Convention:
    """What a semantic convention's attributes mean. Subclassed per format."""

    def kind(self, span: Span) -> str:
        raise NotImplementedError

    def agent_name(self, span: Span) -> str | None:
        raise NotImplementedError

    def input_messages(self, span: Span) -> list[dict]:
        """Messages as ``{"role", "parts": [{"type": "text"|"reasoning"|"tool_call"|
        "tool_call_response", ...}]}``."""
        raise NotImplementedError

    def output_messages(self, span: Span) -> list[dict]:
        raise NotImplementedError

    def tool(self, span: Span) -> tuple[str | None, object, object, str | None]:
        """(tool name, arguments, result, call id) of a tool span."""
        raise NotImplementedError

    def model(self, span: Span) -> str | None:
        raise NotImplementedError

    def tokens(self, span: Span) -> tuple[int | None, int | None]:
        raise NotImplementedError


# ---------------------------------------------------------------- spans -> steps


def span_records(path: Path, opts: ImportOptions, fmt: str, conv: Convention) -> Iterator[ImportedRecord]:
    """One trajectory per trace id, in the order the traces first appear.

    A collector export also holds traces of other instrumentation (HTTP, database spans);
    traces without a single LLM, tool or agent step are left out, their spans counted as dropped.
    Within a trace, a span of no agent kind (an HTTP call, a framework wrapper) is dropped too.
    """
    spans = read_spans(path, opts)
    traces: dict[str, list[Span]] = defaultdict(list)
    for sp in spans:
        traces[sp.trace_id].append(sp)
    kinds = {id(sp): conv.kind(sp) for sp in spans}  # each span's kind, worked out once
    records, left_out = [], 0
    for trace_id, members in traces.items():
        if any(kinds[id(s)] in (LLM, TOOL, AGENT, EVENT) for s in members):
            records.append(_trace_record(path, opts, fmt, conv, trace_id, members, kinds))
        else:
            left_out += len(members)
    if not records:
        raise ImportFailure(str(path), "nothing to import: no LLM, tool or agent spans found")
    records[0].ledger.dropped("span of a trace without LLM, tool or agent spans", left_out)
    yield from records


def _trace_record(path: Path, opts: ImportOptions, fmt: str, conv: Convention, trace_id: str,
                  spans: list[Span], kinds: dict[int, str]) -> ImportedRecord:
    builder = _TraceBuilder(conv, spans, kinds)
    steps = builder.build()
    other = sum(kinds[id(s)] == OTHER for s in spans)
    steps.ledger.mapped(len(spans) - other)
    steps.ledger.dropped("span of no agent kind (HTTP, framework wrapper, empty)", other)
    by_id = {s.span_id: s for s in spans}
    roots = [s for s in spans if s.parent_id not in by_id]
    root = min(roots, key=lambda s: s.start) if roots else spans[0]
    models = [m for s in spans if kinds[id(s)] == LLM and (m := str_or_none(conv.model(s)))] or [
        m for s in sorted(spans, key=lambda s: len(builder.ancestors[id(s)]))  # the outermost agent's
        if (m := str_or_none(conv.model(s)))]
    service = next((s.resource.get("service.name") for s in spans if s.resource.get("service.name")), None)
    task = next((s.content for s in steps.steps if s.role == "user" and s.content), None)
    traj = Trajectory(
        id=stable_id(fmt, trace_id, path.name),
        source_format=fmt,
        source_path=str(path),
        source_ref=f"trace {trace_id}",
        title=builder.agents[0] if builder.agents else root.name,
        system=service if isinstance(service, str) else None,
        model=models[0] if models else None,
        task=task,
        metadata={"trace_id": trace_id, "spans": len(spans), "agents": builder.agents},
        raw=orjson.dumps([s.raw for s in spans], default=str),
        steps=steps.steps,
    )
    return ImportedRecord(trajectory=finish(traj, opts), ledger=steps.ledger)


def _clean(messages: object) -> list[dict]:
    """Messages from a convention with their roles, part types, ids and names as text."""
    out = []
    for m in seq(messages):
        if isinstance(m, dict):
            parts = [{**p, **{k: str_or_none(p.get(k)) for k in ("type", "id", "name")}}
                     for p in seq(m.get("parts")) if isinstance(p, dict)]
            out.append({"role": str_or_none(m.get("role")) or "", "parts": parts})
    return out


def _seen_key(ptype: str, role: str, ident: object, name: str | None) -> tuple:
    """What makes a message part the same as one shown before. Tool calls and results are the
    same by id whatever role repeats them (Gemini sends results back as the user's)."""
    return (ptype, None if ptype in ("tool_call", "tool_call_response") else role, ident, name)


class _TraceBuilder:
    """Walks one trace's spans in time order and appends their steps.

    ``kinds`` holds each span's kind by ``id(span)``; the ancestor chains are walked once here,
    as every step's context looks them up again.
    """

    def __init__(self, conv: Convention, spans: list[Span], kinds: dict[int, str]):
        self.conv = conv
        self.spans = spans
        self.kinds = kinds
        self.by_id = {s.span_id: s for s in spans}
        self.ancestors = {id(s): self._ancestors(s) for s in spans}
        self.out = StepList()
        self.anchor: dict[str, int] = {}  # span id -> index of the step children hang under
        self.seen: set = set()
        self.pending: dict[str, list[Step]] = defaultdict(list)  # tool name -> calls awaiting a span
        self.call_of: dict[str, str | None] = {}  # tool span id -> the call id its result answers
        self.single = len(spans) == 1
        self.agents: list[str] = []
        #: agent span id -> its output messages not shown yet, as (message, part index) in order
        self.held: dict[str, list[tuple[dict, int]]] = {}

    def build(self) -> StepList:
        items = []  # (time, depth, order, action, span)
        for order, sp in enumerate(self.spans):
            depth = len(self.ancestors[id(sp)])
            kind = self.kinds[id(sp)]
            if kind == AGENT:
                items.append((sp.start, depth, order, "agent", sp))
                items.append((sp.end, -depth, order, "agent_end", sp))
            elif kind == EVENT:
                items.append((sp.start, depth, order, kind, sp))
            elif kind == LLM:
                items.append((sp.start, depth, order, "llm_in", sp))
                items.append((sp.end, depth, order, "llm_out", sp))
            elif kind == TOOL:
                items.append((sp.start, depth, order, "tool_in", sp))
                items.append((sp.end, depth, order, "tool_out", sp))
            if sp.error and kind != TOOL:
                items.append((sp.end, depth, order, "error", sp))
        for _, _, _, action, sp in sorted(items, key=lambda t: t[:3]):
            getattr(self, "_" + action)(sp)
        return self.out

    def _ancestors(self, sp: Span) -> list[Span]:
        chain, cur, guard = [], sp, set()
        while cur.parent_id in self.by_id and cur.parent_id not in guard:
            guard.add(cur.parent_id)
            cur = self.by_id[cur.parent_id]
            chain.append(cur)
        return chain

    def _context(self, sp: Span) -> dict:
        """agent, parent and group of a step made from ``sp``."""
        agent = parent = group = None
        for anc in [sp, *self.ancestors[id(sp)]]:
            kind = self.kinds[id(anc)]
            if agent is None and kind == AGENT:
                agent = self.conv.agent_name(anc)
            if group is None and kind == CHAIN:
                group = anc.name
            if parent is None and anc is not sp and anc.span_id in self.anchor:
                parent = self.anchor[anc.span_id]
        return {"agent": agent, "parent": parent, "group": group or sp.name}

    def _base(self, sp: Span) -> dict:
        return {"timestamp": parse_time(sp.start) if sp.start else None,
                "attributes": {"span_id": sp.span_id, "span_name": sp.name}}

    def _agent(self, sp: Span) -> None:
        name = self.conv.agent_name(sp) or sp.name
        if name not in self.agents:
            self.agents.append(name)
        ctx = self._context(sp)
        step = self.out.add(kind="event", role="agent", content=f"agent {name} starts", raw=plain(sp.raw),
                            **{**ctx, "agent": name}, **self._base(sp))
        self.anchor[sp.span_id] = step.index
        ctx = {**ctx, "parent": step.index}  # the agent's own messages hang under its step
        for j, msg in enumerate(_clean(self.conv.input_messages(sp))):
            role = msg["role"] or "user"
            if role in _CONTEXT_ROLES:
                self._message(sp, msg, f"{sp.span_id}.in[{j}]", {**ctx, "agent": role})
        held = [({**msg, "index": j}, k) for j, msg in enumerate(_clean(self.conv.output_messages(sp)))
                for k in range(len(msg["parts"]))]
        if held:
            self.held[sp.span_id] = held

    def _agent_end(self, sp: Span) -> None:
        self._release(sp, None, sp.end)

    def _release(self, agent: Span, call_id: str | None, when: int) -> None:
        """Show an agent span's held output parts, at time ``when``: up to the tool call
        ``call_id``, or all (None)."""
        held = self.held.get(agent.span_id)
        if not held:
            return
        upto = len(held)
        if call_id is not None:
            upto = next((i + 1 for i, (m, k) in enumerate(held)
                         if m["parts"][k]["type"] == "tool_call" and m["parts"][k].get("id") == call_id), 0)
        ctx = {**self._context(agent), "agent": self.conv.agent_name(agent) or agent.name,
               "parent": self.anchor[agent.span_id]}
        shown = {s.content for s in self.out.steps} if call_id is None else set()
        for msg, k in held[:upto]:
            part = msg["parts"][k]
            if part["type"] == "text" and as_text(part.get("content")) in shown:
                continue  # the agent's answer, already shown (a final_answer tool's result)
            one = {"role": msg["role"] or "assistant", "parts": [part]}
            self._message(agent, one, f"{agent.span_id}.out[{msg['index']}]", ctx, first_part=k, when=when)
        del held[:upto]

    def _event(self, sp: Span) -> None:
        ctx = self._context(sp)
        text = as_text(sp.attributes.get("output.value") or sp.attributes.get("input.value") or sp.name)
        self.out.add(kind="event", content=f"{sp.name}: {text}", raw=plain(sp.raw), **ctx, **self._base(sp))

    def _llm_in(self, sp: Span) -> None:
        ctx = self._context(sp)
        for j, msg in enumerate(_clean(self.conv.input_messages(sp))):
            role = msg["role"] or "user"
            if not self.single and role not in _CONTEXT_ROLES:
                continue
            # A tool's answer in a model's input, outside any agent span, is the environment's (as
            # in a chat log), not an agent named "tool".
            agent = role if role in _CONTEXT_ROLES else ctx["agent"] or ("environment" if role == "tool" else role)
            self._message(sp, msg, f"{sp.span_id}.in[{j}]", {**ctx, "agent": agent})

    def _llm_out(self, sp: Span) -> None:
        ctx = self._context(sp)
        first = len(self.out.steps)
        for j, msg in enumerate(_clean(self.conv.output_messages(sp))):
            self._message(sp, msg, f"{sp.span_id}.out[{j}]", {**ctx, "agent": ctx["agent"] or "assistant"})
        if len(self.out.steps) > first:
            tokens_in, tokens_out = self.conv.tokens(sp)
            self.out.steps[first].tokens_in = tokens_in
            self.out.steps[first].tokens_out = tokens_out
            model = self.conv.model(sp)
            if model:
                self.out.steps[first].attributes["model"] = model

    def _message(self, sp: Span, msg: dict, sid: str, ctx: dict, first_part: int = 0, when: int | None = None) -> None:
        role = msg["role"]
        base = self._base(sp)
        if when:
            base["timestamp"] = parse_time(when)
        elif sp.end and sid.split(".")[-1].startswith("out"):
            base["timestamp"] = parse_time(sp.end)
        for k, part in enumerate(msg["parts"], start=first_part):
            ptype = part["type"]
            key = _seen_key(ptype, role, part.get("id") or json_text(part.get("content") or part.get("arguments")),
                            part.get("name"))
            if key in self.seen:
                continue
            self.seen.add(key)
            step_id = f"{sid}[{k}]"
            raw = plain(part)
            if ptype == "tool_call":
                args = json_text(part.get("arguments")) or ""
                step = self.out.add(id=step_id, kind="tool_call", role=role, content=f"{part.get('name')}({args})",
                                    tool_name=part.get("name"), tool_args=args, call_id=part.get("id"),
                                    raw=raw, **ctx, **base)
                self.pending[str(part.get("name"))].append(step)
            elif ptype == "tool_call_response":
                self.out.add(id=step_id, kind="tool_result", role=role, content=as_text(part.get("response")),
                             call_id=part.get("id"), raw=raw, **ctx, **base)
            else:
                kind = "thought" if ptype == "reasoning" else "system" if role in ("system", "developer") else "message"
                self.out.add(id=step_id, kind=kind, role=role, content=as_text(part.get("content")),
                             raw=raw, **ctx, **base)

    def _tool_in(self, sp: Span) -> None:
        name, args, _, call_id = self.conv.tool(sp)
        if call_id is not None:
            for anc in self.ancestors[id(sp)]:
                if self.kinds[id(anc)] == AGENT:
                    self._release(anc, call_id, sp.start)
        queue = self.pending.get(str(name)) or []
        match = next((c for c in queue if call_id is None or c.call_id in (None, call_id)), None)
        if match is not None:
            queue.remove(match)
            if match.call_id is None:
                match.call_id = call_id or sp.span_id
            self.call_of[sp.span_id] = match.call_id
            return
        ctx = self._context(sp)
        args_text = json_text(args) or ""
        step = self.out.add(id=f"{sp.span_id}.call", kind="tool_call", role="assistant",
                            content=f"{name}({args_text})", tool_name=name, tool_args=args_text,
                            call_id=call_id or sp.span_id, raw=plain(sp.raw), **ctx, **self._base(sp))
        self.call_of[sp.span_id] = step.call_id
        self.anchor[sp.span_id] = step.index
        if call_id is not None:  # a model's output naming this call later is the same call
            self.seen.add(_seen_key("tool_call", "assistant", call_id, str_or_none(name)))

    def _tool_out(self, sp: Span) -> None:
        name, _, result, _ = self.conv.tool(sp)
        ctx = self._context(sp)
        base = self._base(sp)
        base["timestamp"] = parse_time(sp.end) if sp.end else base["timestamp"]
        if sp.error:
            base["attributes"]["error"] = sp.error
        self.out.add(id=f"{sp.span_id}.result", kind="tool_result", role="tool", tool_name=name,
                     content=as_text(result) if result is not None else (sp.error or ""),
                     call_id=self.call_of.get(sp.span_id), raw=plain(sp.raw), **ctx, **base)
        self.seen.add(_seen_key("tool_call_response", "tool", self.call_of.get(sp.span_id), None))

    def _error(self, sp: Span) -> None:
        ctx = self._context(sp)
        self.out.add(id=f"{sp.span_id}.error", kind="error", content=sp.error or "error", raw=plain(sp.raw),
                     **ctx, **self._base(sp))
