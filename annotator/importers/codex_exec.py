"""The ``codex exec --json`` event stream: what Codex prints on stdout for a non-interactive run.

The shapes are Codex's own: ``ThreadEvent`` and ``ThreadItem`` in
``codex-rs/exec/src/exec_events.rs`` of openai/codex (mirrored by its TypeScript SDK,
``sdk/typescript/src/events.ts`` and ``items.ts``), emitted by
``codex-rs/exec/src/event_processor_with_jsonl_output.rs``. Each line is one event tagged by
``type``: ``thread.started`` (``thread_id``), ``turn.started``, ``turn.completed`` (``usage``:
``input_tokens``, ``cached_input_tokens``, ``output_tokens``), ``turn.failed`` (``error.message``),
``item.started`` / ``item.updated`` / ``item.completed`` (``item``), and a fatal ``error``
(``message``). An item is ``{"id": "item_0", "type": ...}`` plus its fields: ``agent_message``
and ``reasoning`` (``text``), ``command_execution`` (``command``, ``aggregated_output``,
``exit_code``, ``status``), ``file_change`` (``changes``: ``path``, ``kind``, newer versions a
``diff``; ``status``), ``mcp_tool_call`` (``server``, ``tool``, ``arguments``, ``result``
with MCP ``content`` blocks, ``error``, ``status``), ``collab_tool_call`` (sub-agent tools:
``tool``, ``prompt``, ``receiver_thread_ids``, ``agents_states``), ``web_search`` (``query``,
newer versions an ``action``), ``todo_list`` (``items``: ``text``, ``completed``), ``error``
(``message``), and in the SDK's newer list ``plan`` (``text``).

The stream carries no timestamps and no prompt. Steps come from ``item.completed``: a tool
item gives a call and a linked result; the call takes the place where the item *started*, so
commands that ran side by side show as such, and the result the place where it completed.
``item.updated`` only refreshes what a started item holds; an item that never completed (the
turn failed while a command ran) is kept as its call, marked incomplete. ``turn.completed``
usage is summed into the metadata; ``turn.failed`` makes the outcome a failure and is kept as
an error step. The file holds one stream; a resumed run appended to it (same ``thread_id``)
continues the same trajectory, another thread starts a new one.

A saved stream often holds lines that are not Codex's events: stderr redirected into it
(``Reading prompt from stdin...``) or a JSON header a wrapper wrote first. A text line, or a
JSON object that is no event (no ``type``), is left out and counted as a foreign line; a line
that starts like JSON and does not parse is still a malformed line.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, stable_id
from annotator.importers.detect import JSONL_LINES, Head
from annotator.importers.reading import iter_jsonl
from annotator.importers.steps import StepList, as_int, compact, json_text, obj, parse_time, plain, seq, str_or_none
from annotator.models import HIDDEN, Step, Trajectory

AGENT = "codex"
_ITEM_EVENTS = ("item.started", "item.updated", "item.completed")
#: Events that only report progress: no step of their own.
_QUIET_EVENTS = {"turn.started", "item.plan.delta"}
_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens")
_FAILED = {"failed", "declined"}


@dataclass
class _Entry:
    """A place in the step order: its steps once known, or the latest state of an item still running."""

    lineno: int
    steps: list[dict] | None = None
    item: dict | None = None
    unknown: str | None = None  # an event or item type this reader does not know
    raw: object = None


@dataclass
class _Thread:
    """One thread's events as they are read."""

    thread_id: str
    entries: list[_Entry] = field(default_factory=list)
    running: dict[str, _Entry] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=dict)
    turns: int = 0
    failures: list[str] = field(default_factory=list)
    started: object = None  # timestamp of thread.started, where the version writes one
    #: What became of each of the thread's lines.
    ledger: Ledger = field(default_factory=Ledger)

    def add(self, lineno: int, **fields) -> None:
        self.entries.append(_Entry(lineno=lineno, steps=[fields]))

    def last_step(self) -> dict:
        last = self.entries[-1] if self.entries else None
        return last.steps[-1] if last is not None and last.steps else {}


def _changes_text(changes: list) -> str:
    lines = []
    for c in changes:
        c = obj(c)
        lines.append(f"{as_text(c.get('kind')) or 'change'} {as_text(c.get('path'))}")
        if c.get("diff"):
            lines.append(as_text(c.get("diff")))
    return "\n".join(lines)


def _todo_text(items: list) -> str:
    return "\n".join(
        f"[{'x' if obj(i).get('completed') is True else ' '}] {as_text(obj(i).get('text'))}" for i in items
    )


def _tool(item: dict, itype: str) -> tuple[dict, dict | None]:
    """A tool item's call fields and its result fields (None where the stream has no result)."""
    status = str_or_none(item.get("status"))
    attrs = {"status": status} if status else {}
    if itype == "command_execution":
        call = dict(tool_name=itype, tool_args=json_text({"command": item.get("command")}),
                    content=as_text(item.get("command")))
        if item.get("exit_code") is not None:
            attrs["exit_code"] = item.get("exit_code")
        result = dict(content=as_text(item.get("aggregated_output")), attributes=attrs)
    elif itype == "file_change":
        call = dict(tool_name=itype, tool_args=json_text(item.get("changes")),
                    content=_changes_text(seq(item.get("changes"))))
        result = dict(content=status or "", attributes=attrs)
    elif itype == "mcp_tool_call":
        server, tool = as_text(item.get("server")), as_text(item.get("tool"))
        args = json_text(item.get("arguments")) or ""
        call = dict(tool_name=tool, tool_args=args, content=f"{server}.{tool}({args})", attributes={"server": server})
        res, error = obj(item.get("result")), obj(item.get("error"))
        text = as_text(error.get("message")) if error else as_text(res.get("content"))
        if not text and res.get("structured_content") is not None:
            text = compact(res.get("structured_content"))
        result = dict(content=text, attributes=attrs)
    elif itype == "collab_tool_call":
        tool = as_text(item.get("tool")) or itype
        args = json_text({k: item.get(k) for k in ("prompt", "receiver_thread_ids") if item.get(k) is not None})
        call = dict(tool_name=tool, tool_args=args, content=f"{tool}({args})")
        states = obj(item.get("agents_states"))
        text = "\n".join(f"{k}: {as_text(obj(v).get('status'))} {as_text(obj(v).get('message'))}".rstrip()
                         for k, v in states.items())
        result = dict(content=text or status or "", attributes=attrs)
    else:  # web_search: the query goes out; the results reach only the model
        args = {"query": item.get("query"), **({"action": item["action"]} if item.get("action") else {})}
        call = dict(tool_name=itype, tool_args=json_text(args), content=as_text(item.get("query")))
        result = None
    if status in _FAILED and result is not None:
        result["attributes"]["is_error"] = True
    return call, result


_TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "collab_tool_call", "web_search"}
_TEXT_ITEMS = {"agent_message": ("message", "text"), "reasoning": ("thought", "text"), "plan": ("plan", "text"),
               "error": ("error", "message")}


def _item_steps(item: dict, raw: object) -> list[dict] | None:
    """Step fields for a finished item: one step, or a tool call and its result; None for an
    item type this reader does not know."""
    iid = str_or_none(item.get("id"))
    itype = str_or_none(item.get("type"))
    base = dict(agent=AGENT, role="assistant", group=iid, raw=raw)
    ids = {"item_id": iid} if iid else {}
    if itype in _TEXT_ITEMS:
        kind, key = _TEXT_ITEMS[itype]
        return [dict(base, kind=kind, content=as_text(item.get(key)), attributes=dict(ids))]
    if itype == "todo_list":
        return [dict(base, kind="plan", content=_todo_text(seq(item.get("items"))), attributes=dict(ids))]
    if itype not in _TOOL_ITEMS:
        return None
    call, result = _tool(item, itype)
    call_attrs = call.pop("attributes", {})
    steps = [dict(base, kind="tool_call", call_id=iid, **call, attributes={**ids, **call_attrs})]
    if result is not None:
        steps.append(dict(base, kind="tool_result", role="tool", agent="environment", call_id=iid,
                          content=result["content"], attributes={**ids, **result["attributes"]}))
    return steps


class _Reader:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.threads: dict[str, _Thread] = {}
        self.current: _Thread | None = None
        self.foreign: list[int] = []  # numbers of lines that are not Codex events

    def thread(self) -> _Thread:
        if self.current is None:  # a stream cut before its thread.started line
            self.current = self.threads.setdefault("", _Thread(thread_id=""))
        return self.current

    def line(self, lineno: int, rec: object) -> None:
        if not isinstance(rec, dict):
            raise ImportFailure(str(self.path), "expected a JSON object", where=f"line {lineno}")
        if "type" not in rec:  # a wrapper's header or another tool's output: not an event
            self.foreign.append(lineno)
            return
        etype = str_or_none(rec.get("type"))
        if etype == "thread.started":
            tid = str_or_none(rec.get("thread_id")) or ""
            self.current = self.threads.setdefault(tid, _Thread(thread_id=tid))
            self.current.started = self.current.started or parse_time(rec.get("timestamp"))
            self.current.ledger.mapped()
            return
        t = self.thread()
        if etype in _ITEM_EVENTS:
            self.item(t, lineno, etype, obj(rec.get("item")), plain(rec))
            return
        if etype in _QUIET_EVENTS:
            t.ledger.dropped("progress")
            return
        if etype in ("turn.failed", "error"):
            message = as_text(obj(rec.get("error") if etype == "turn.failed" else rec).get("message")) or compact(rec)
            if etype == "turn.failed":
                t.turns += 1
                t.failures.append(message)
            last = t.last_step()
            if last.get("kind") == "error" and last.get("content") == message:  # the fatal error, repeated
                t.ledger.folded("repeated error")
                return
            t.add(lineno, kind="error", agent=AGENT, content=message, raw=plain(rec), attributes={"event": etype})
        elif etype == "turn.completed":
            t.turns += 1
            usage = obj(rec.get("usage"))
            for key in _USAGE_KEYS:
                n = as_int(usage.get(key))
                if n is not None:
                    t.usage[key] = t.usage.get(key, 0) + n
        elif etype == "request_user_input":
            questions = [as_text(obj(q).get("question")) for q in seq(rec.get("questions"))]
            t.add(lineno, kind="message", role="assistant", agent=AGENT, recipient="user",
                  content="\n".join(questions), raw=plain(rec))
        else:
            t.entries.append(_Entry(lineno=lineno, unknown=str(etype), raw=plain(rec)))
        t.ledger.mapped()

    def item(self, t: _Thread, lineno: int, etype: str, item: dict, raw: object) -> None:
        """An item event: the first one of an item is its place (mapped), later ones update it (folded)."""
        iid = str_or_none(item.get("id"))
        if iid is not None and iid in t.running:
            t.ledger.folded("item update")
        else:
            t.ledger.mapped()
        if etype != "item.completed":
            if iid is not None:  # keep the place where the item started, and its latest state
                if iid not in t.running:
                    t.running[iid] = _Entry(lineno=lineno)
                    t.entries.append(t.running[iid])
                t.running[iid].item, t.running[iid].raw = item, raw
            return
        entry = t.running.pop(iid, None) if iid is not None else None
        if entry is None:
            entry = _Entry(lineno=lineno)
            t.entries.append(entry)
        entry.item, entry.raw = None, raw
        steps = _item_steps(item, raw)
        if steps is None:
            entry.unknown = f"item/{str_or_none(item.get('type'))}"
            return
        steps[0]["id"] = f"line {entry.lineno}"
        entry.steps = steps[:1]
        for extra in steps[1:]:
            t.add(lineno, id=f"line {lineno}/result", **extra)


def _steps(t: _Thread) -> tuple[StepList, int]:
    """The thread's steps in order, results linked to their calls; and how many items never completed."""
    out = StepList(t.ledger)
    incomplete = 0
    for entry in t.entries:
        steps = entry.steps
        if steps is None and entry.unknown is None:  # started, never completed: its last state seen
            incomplete += 1
            steps = _item_steps(entry.item or {}, entry.raw)
            if steps is None:
                entry.unknown = f"item/{str_or_none((entry.item or {}).get('type'))}"
            else:
                steps = [dict(steps[0], id=f"line {entry.lineno}")]
                steps[0]["attributes"]["incomplete"] = True
        if entry.unknown is not None:
            out.unknown_event(entry.unknown, entry.raw, id=f"line {entry.lineno}")
            continue
        for fields in steps:
            out.add(**{"id": f"line {entry.lineno}", **fields})
    # A resumed run numbers its items from item_0 again: a result pairs with the latest call of its id.
    calls: dict[str, Step] = {}
    for s in out.steps:
        if s.kind == "tool_call" and s.call_id:
            calls[s.call_id] = s
        elif s.kind == "tool_result" and s.call_id in calls:
            call = calls.pop(s.call_id)
            s.link, call.link, s.tool_name = call.index, s.index, call.tool_name
    return out, incomplete


def _json_lines_of(head: Head) -> list[object]:
    """The JSON lines of a head: all of a JSON Lines head; of a text head, the lines that parse
    (a stream whose first lines are stderr text)."""
    if head.kind == "jsonl":
        return head.lines
    if head.kind != "text":
        return []
    parsed = []
    for line in head.text.splitlines()[:JSONL_LINES]:
        if line.lstrip().startswith("{"):
            try:
                parsed.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
    return parsed


def without_text_lines(raw: bytes) -> tuple[bytes, list[int]]:
    """``raw`` with every line that is plain text (not JSON: it does not start with ``{`` or
    ``[``) blanked, numbering kept; and those lines' numbers."""
    lines = raw.split(b"\n")
    foreign = [i for i, line in enumerate(lines, start=1) if line.strip() and line.lstrip()[:1] not in (b"{", b"[")]
    for i in foreign:
        lines[i - 1] = b""
    return b"\n".join(lines), foreign


def is_exec_stream(head: Head) -> bool:
    for line in _json_lines_of(head)[:5]:
        if not isinstance(line, dict):
            continue
        etype = line.get("type")
        if etype == "thread.started" and isinstance(line.get("thread_id"), str):
            return True
        item = line.get("item")
        if etype in _ITEM_EVENTS and isinstance(item, dict) and "id" in item and "type" in item and len(line) == 2:
            return True
    return False


class CodexExec(Importer):
    name = "codex_exec"
    description = "codex exec --json event stream (thread.started, item.completed, turn.completed ...)"

    def sniff(self, head: Head) -> bool:
        return is_exec_stream(head)

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        reader = _Reader(path)
        skipped = opts.extra.setdefault("skipped_lines", [])
        raw = path.read_bytes()
        events, text_lines = without_text_lines(raw)
        for lineno, rec in iter_jsonl(path, opts, skipped, events):
            reader.line(lineno, rec)
        foreign = sorted(text_lines + reader.foreign)
        if not reader.threads:
            raise ImportFailure(str(path), "nothing to import: no codex exec events found")
        for t in reader.threads.values():
            out, incomplete = _steps(t)
            steps = out.require(path, "codex exec items")
            if t.started:
                steps[0].timestamp = steps[0].timestamp or t.started
            meta: dict = {"thread_id": t.thread_id or None, "turns": t.turns, "usage": t.usage}
            if t.failures:
                meta[HIDDEN] = {"turn_failed": t.failures}
            if foreign:  # said once, with the first trajectory of the file
                out.ledger.dropped("not a codex exec event (stderr text, a header)", len(foreign))
                foreign = []
            out.ledger.warn("incomplete", "item started but never completed kept as an incomplete call", incomplete)
            thread = t.thread_id or path.stem
            traj = Trajectory(
                id=stable_id(self.name, thread, path.name),
                source_format=self.name,
                source_path=str(path),
                source_ref=f"thread {t.thread_id}" if t.thread_id else None,
                title=f"codex exec {thread}",
                system="Codex CLI",
                outcome="failure" if t.failures else "unknown",
                metadata=meta,
                raw=raw,
                steps=steps,
            )
            yield ImportedRecord(trajectory=finish(traj, opts), ledger=out.ledger)
