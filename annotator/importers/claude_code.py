"""Claude Code sessions: the transcript JSONL under ``~/.claude/projects/<cwd>/<session>.jsonl``
and the ``claude -p --output-format stream-json`` stream.

Claude Code often writes one API response over several lines (one content block each) that
share ``message.id``; their blocks are kept once each and the response's token usage is
counted once. ``tool_use`` blocks become tool calls and the ``tool_result`` blocks of the next
user line their results, paired by id. Sidechain lines (``isSidechain``: work of a sub-agent
started with the Task tool) are attributed to their own agent and hang under the call that
started them. ``summary`` lines give the title; a stream-json ``result`` line the outcome.

Newer versions write each sub-agent to ``<sessionId>/subagents/agent-<agentId>.jsonl`` beside
the session file: the same line grammar, every line ``isSidechain: true`` with its ``agentId``
(layout and fields as documented by third-party readers of these files, e.g. the
sonnes/chitragupt sub-agent spec; there is no official schema). A session is imported with its
sub-agents folded in: each sub-agent's steps go under the ``Task``/``Agent`` call that launched
it, in time order with the rest. The call is found from the parent's ``toolUseResult.agentId``
on the call's result line, a ``progress`` line's ``data.agentId`` and ``parentToolUseID``, the
``agentId: <id>`` line in the result text, or else the sub-agent's first prompt equal to the
call's ``prompt``; that prompt is then the launching agent's message to the sub-agent. A
sub-agent file is not imported on its own while its session file is there, so nothing appears
twice; ``agent-acompact-*`` files (context compaction) are left out.

Claude Code 2.1 writes ``progress`` lines (hook runs, sub-agent progress, tool output as it
streams): they repeat what the steps show or record editor state, and in a real session make up
most of the lines, so they are not steps (dropped, reason ``progress``), except a sub-agent's
``agent_progress`` when its own file is absent: then they are all there is of it. The task is the
first request the user typed: slash-command echoes (``<command-name>/clear</command-name>``),
their ``<local-command-stdout>`` and the caveat Claude Code injects before them are not one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import (ImportedRecord, Importer, ImportOptions, as_text, finish, first_request,
                                      stable_id)
from annotator.importers.detect import Head
from annotator.importers.media import media_text
from annotator.importers.reading import iter_jsonl
from annotator.importers.steps import StepList, as_int, fingerprint, json_text, obj, parse_json_maybe, parse_time, plain
from annotator.importers.steps import seq, str_or_none
from annotator.models import HIDDEN, Step, Trajectory

MAIN_AGENT = "claude"
_MESSAGE_TYPES = {"user", "assistant", "system", "summary"}
#: Line types that only record editor state: no step.
_STATE_LINES = {"file-history-snapshot", "queue-operation", "permission-mode", "custom-title", "tag"}
_SUBAGENT_TOOLS = {"Task", "Agent"}
_AGENT_ID_IN_TEXT = re.compile(r"\bagent_?[iI]d: *([\w@.-]+)")
_COMPACTION = "agent-acompact-"
#: User text Claude Code writes itself around a slash command, not typed as a request.
_COMMAND_ECHO = re.compile(r"^\s*<(command-name|command-message|command-args|local-command-stdout|local-command-stderr"
                           r"|local-command-caveat)>")


def is_request(step: Step) -> bool:
    """Whether a step is a request the user typed (not a tool result, injected text or command echo)."""
    return step.role == "user" and step.kind == "message" and bool(step.content.strip()) and \
        not _COMMAND_ECHO.match(step.content)


class _Session:
    def __init__(self, ledger: Ledger | None = None, folded: set[str] = frozenset()) -> None:
        self.folded = folded  # sub-agents whose own files are read with the session
        self.agent_calls: dict[str, str] = {}  # sub-agent id -> tool_use id of its launching call
        self.out = StepList(ledger)
        self.blocks: dict[str, set[bytes]] = {}  # message id -> blocks already emitted
        self.usage_done: set[str] = set()
        self.meta: dict = {}
        self.title: str | None = None
        self.model: str | None = None
        self.result: dict | None = None
        self.task_call: int | None = None  # the latest Task/Agent call of the main agent

    def line(self, lineno: int, rec: object, path: Path) -> None:
        if not isinstance(rec, dict):
            raise ImportFailure(str(path), "expected a JSON object", where=f"line {lineno}")
        kind = str_or_none(rec.get("type"))
        base = dict(timestamp=parse_time(rec.get("timestamp")), raw=plain(rec))
        side = bool(rec.get("isSidechain"))
        agent = (f"subagent {rec['agentId']}" if rec.get("agentId") else "sidechain") if side else MAIN_AGENT
        ctx = {"parent": self.task_call if side else None, "group": "sidechain" if side else None}
        for key in ("sessionId", "session_id", "version", "cwd", "gitBranch"):
            if rec.get(key) and key not in self.meta:
                self.meta[key] = rec[key]
        ledger = self.out.ledger
        if kind == "summary":
            self.title = self.title or as_text(rec.get("summary"))
            ledger.mapped()
        elif kind in ("user", "assistant"):
            self.message(lineno, rec, agent, base, ctx)
        elif kind == "system":
            if rec.get("subtype") == "init":
                self.model = self.model or str_or_none(rec.get("model"))
                self.meta.setdefault("tools", rec.get("tools"))
            text = as_text(rec.get("content")) or f"[{rec.get('subtype') or 'system'}]"
            self.out.add(id=f"line {lineno}", kind="system", role="system", agent="system", content=text,
                         **base, **ctx)
            ledger.mapped()
        elif kind == "result":
            self.result = plain(rec)
            ledger.mapped()
        elif kind == "progress":
            if self.agent_progress(rec):
                ledger.folded("sub-agent progress (the sub-agent's own file is read)")
            elif obj(rec.get("data")).get("type") == "agent_progress":
                # the only record of a sub-agent whose own file is absent: kept, and counted as unknown
                self.out.unknown_event(str(kind), base["raw"], id=f"line {lineno}", timestamp=base["timestamp"], **ctx)
                ledger.mapped()
            else:
                ledger.dropped("progress")
        elif kind in _STATE_LINES:
            ledger.dropped("editor state")
        else:
            self.out.unknown_event(str(kind), base["raw"], id=f"line {lineno}", timestamp=base["timestamp"], **ctx)
            ledger.mapped()

    def agent_progress(self, rec: dict) -> bool:
        """Note which call a sub-agent's progress line belongs to; True when the line only repeats
        a sub-agent read from its own file."""
        data = obj(rec.get("data"))
        agent_id, call = str_or_none(data.get("agentId")), str_or_none(rec.get("parentToolUseID"))
        if data.get("type") != "agent_progress" or not agent_id:
            return False
        if call:
            self.agent_calls.setdefault(agent_id, call)
        return agent_id in self.folded

    def launched(self, rec: dict, block: dict) -> None:
        """Note the sub-agent a Task/Agent result names, from ``toolUseResult`` or the result text."""
        call = str_or_none(block.get("tool_use_id"))
        agent_id = str_or_none(obj(rec.get("toolUseResult")).get("agentId"))
        if agent_id is None:
            found = _AGENT_ID_IN_TEXT.search(as_text(block.get("content")))
            agent_id = found.group(1) if found else None
        if call and agent_id:
            self.agent_calls.setdefault(agent_id, call)

    def message(self, lineno: int, rec: dict, agent: str, base: dict, ctx: dict) -> None:
        msg = obj(rec.get("message"))
        role = str_or_none(msg.get("role")) or str_or_none(rec.get("type"))
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else seq(content)
        mid = str(msg.get("id") or rec.get("requestId") or rec.get("uuid") or lineno)
        seen = self.blocks.setdefault(mid, set())
        first = len(self.out.steps)
        who = agent if role == "assistant" else "user"
        injected = bool(rec.get("isMeta") or rec.get("isCompactSummary"))
        repeated = empty = 0
        for j, block in enumerate(blocks):
            if not isinstance(block, dict):
                continue
            key = orjson.dumps(block, option=orjson.OPT_SORT_KEYS, default=str)
            if key in seen:
                repeated += 1
                continue
            seen.add(key)
            sid = f"line {lineno}[{j}]"
            btype = str_or_none(block.get("type"))
            if btype == "text":
                if not as_text(block.get("text")).strip():
                    empty += 1  # a whitespace-only block a streamed response opens with
                    continue
                kind = "system" if injected else "message"
                self.out.add(id=sid, kind=kind, role=role, agent=who, content=as_text(block.get("text")), **base, **ctx)
            elif btype in ("thinking", "redacted_thinking"):
                text = as_text(block.get("thinking")) if btype == "thinking" else "[redacted thinking]"
                self.out.add(id=sid, kind="thought", role=role, agent=agent, content=text, **base, **ctx)
            elif btype == "tool_use":
                args = json_text(block.get("input")) or ""
                step = self.out.add(id=sid, kind="tool_call", role=role, agent=agent,
                                    content=f"{block.get('name')}({args})", tool_name=block.get("name"),
                                    tool_args=args, call_id=block.get("id"), **base, **ctx)
                if str_or_none(block.get("name")) in _SUBAGENT_TOOLS and not rec.get("isSidechain"):
                    self.task_call = step.index
            elif btype == "tool_result":
                step = self.out.add(id=sid, kind="tool_result", role="tool", agent="environment",
                                    content=as_text(block.get("content")), call_id=block.get("tool_use_id"),
                                    **base, **ctx)
                if block.get("is_error"):
                    step.attributes["is_error"] = True
                self.launched(rec, block)
            else:
                self.out.add(id=sid, kind="message", role=role, agent=who, content=media_text(block) or f"[{btype}]",
                             **base, **ctx)
        if len(self.out.steps) > first:
            self.out.ledger.mapped()
        elif repeated:
            self.out.ledger.folded("response block already read from an earlier line")
        elif empty:
            self.out.ledger.dropped("whitespace-only text")
        else:
            self.out.ledger.dropped("message without content")
        if role == "assistant":
            self.model = self.model or str_or_none(msg.get("model"))
            usage = obj(msg.get("usage"))
            if usage and mid not in self.usage_done and len(self.out.steps) > first:
                self.usage_done.add(mid)
                self.out.steps[first].tokens_in = as_int(usage.get("input_tokens"))
                self.out.steps[first].tokens_out = as_int(usage.get("output_tokens"))


def _is_transcript(line: object) -> bool:
    return isinstance(line, dict) and str_or_none(line.get("type")) in _MESSAGE_TYPES and (
        ("sessionId" in line and "uuid" in line) or ("session_id" in line and "message" in line))


class ClaudeCode(Importer):
    name = "claude_code"
    description = "Claude Code session transcript JSONL (or claude -p --output-format stream-json)"

    def sniff(self, head: Head) -> bool:
        if head.kind != "jsonl":
            return False
        lines = [ln for ln in head.lines if isinstance(ln, dict)]
        stream_json = any(ln.get("type") == "result" and "subtype" in ln and "session_id" in ln for ln in lines)
        return any(_is_transcript(ln) for ln in lines) or stream_json

    def skip_reason(self, path: Path, walked: bool) -> str | None:
        session = session_of(path)
        if session is None:
            return None
        if session.is_file():
            if path.name.startswith(_COMPACTION):
                return f"context-compaction transcript of the session {session}, left out"
            return f"sub-agent transcript, imported with its session {session}"
        if walked:
            return f"sub-agent transcript whose session {session.name} is absent; name the file to import it alone"
        return None

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        files = subagent_files(path) if session_of(path) is None else []
        s = _Session(folded={_agent_id(f) for f in files if not f.name.startswith(_COMPACTION)})
        skipped = opts.extra.setdefault("skipped_lines", [])
        raw = path.read_bytes()
        for lineno, rec in iter_jsonl(path, opts, skipped, raw):
            s.line(lineno, rec, path)
        session = str(s.meta.get("sessionId") or s.meta.get("session_id") or path.stem)
        outcome, meta = "unknown", {"session": s.meta}
        if s.result is not None:
            outcome = "failure" if s.result.get("is_error") else "unknown"
            meta[HIDDEN] = {"result": s.result}
        main = s.out.require(path, "messages")
        task = next((st.content for st in main if is_request(st)), None)
        steps = main
        if files:
            steps, meta["subagents"] = _fold_subagents(main, files, s, opts)
        meta["agents"] = sorted({st.agent for st in steps if st.agent and st.agent not in ("user", "environment", "system")})
        title = s.title or f"claude session {session}"
        if session_of(path) is not None:
            title = f"claude sub-agent {_agent_id(path)} of session {session}"
        traj = Trajectory(
            id=stable_id(self.name, session, path.name),
            source_format=self.name,
            source_path=str(path),
            title=title,
            system="Claude Code",
            model=s.model,
            task=task,
            outcome=outcome,
            metadata=meta,
            raw=raw,
            steps=steps,
        )
        yield ImportedRecord(trajectory=finish(traj, opts), ledger=s.out.ledger)


def session_of(path: Path) -> Path | None:
    """The session file (there or not) of a sub-agent transcript ``<sessionId>/subagents/agent-*.jsonl``;
    None for any other file."""
    if path.parent.name == "subagents" and path.name.startswith("agent-") and path.suffix == ".jsonl":
        folder = path.parent.parent
        return folder.parent / f"{folder.name}.jsonl"
    return None


def subagent_files(session: Path) -> list[Path]:
    """The sub-agent transcripts Claude Code wrote beside the session file ``session``."""
    folder = session.parent / session.stem / "subagents"
    return sorted(f for f in folder.glob("agent-*.jsonl") if f.is_file()) if folder.is_dir() else []


def _agent_id(path: Path) -> str:
    return path.stem.removeprefix("agent-")


def _fold_subagents(main: list[Step], files: list[Path], s: _Session,
                    opts: ImportOptions) -> tuple[list[Step], list[dict]]:
    """The session's steps with each sub-agent's folded in under its launching call and the
    sub-agents as metadata (with each file's hash, so a change to one is a change to the
    trajectory); warnings go to the session's ledger."""
    calls = {st.call_id: st for st in main if st.kind == "tool_call" and st.tool_name in _SUBAGENT_TOOLS}
    order, parents = list(main), {id(st): main[st.parent] if st.parent is not None else None for st in main}
    described, ledger = [], s.out.ledger
    for f in files:
        data = f.read_bytes()
        info = {"file": f"{f.parent.parent.name}/subagents/{f.name}", "sha256": fingerprint(data)}
        if f.name.startswith(_COMPACTION):
            described.append({**info, "folded": False})
            ledger.warn("incomplete", f"{f.name}: context-compaction transcript, not folded in")
            continue
        sub, bad = _Session(ledger), []
        for lineno, rec in iter_jsonl(f, opts, bad, data):
            sub.line(lineno, rec, f)
        if bad:
            ledger.warn("incomplete", f"{f.name}: {len(bad)} bad line(s) skipped: {', '.join(map(str, bad[:10]))}")
        agent_id = _agent_id(f)
        call = calls.get(s.agent_calls.get(agent_id)) or _call_by_prompt(calls.values(), sub.out.steps)
        name = next((st.agent for st in sub.out.steps if st.role == "assistant"), f"subagent {agent_id}")
        for st in sub.out.steps:
            st.id = f"{f.stem} {st.id}"
            parents[id(st)] = call
            if call is not None and st.role == "user" and st.kind == "message":
                st.agent, st.recipient = call.agent, name  # the prompt is the launching agent's
        _insert(order, sub.out.steps, call)
        described.append({**info, "agent_id": agent_id, "call_id": call.call_id if call else None,
                          "model": sub.model, "steps": len(sub.out.steps), "folded": True})
        if call is None and sub.out.steps:
            ledger.warn("incomplete", f"{f.name}: launching Task call not found; folded in by time")
    for i, st in enumerate(order):
        st.index = i
    for st in order:
        parent = parents[id(st)]
        st.parent = parent.index if parent is not None else None
    return order, described


def _call_by_prompt(calls, steps: list[Step]) -> Step | None:
    """The Task/Agent call whose ``prompt`` is the sub-agent's first user message."""
    first = first_request(steps)
    for call in calls:
        prompt = obj(parse_json_maybe(call.tool_args)).get("prompt")
        if first is not None and isinstance(prompt, str) and prompt.strip() == first.strip():
            return call
    return None


def _insert(order: list[Step], steps: list[Step], call: Step | None) -> None:
    """Put a sub-agent's steps into ``order``: after its launching call, each one after every step
    that happened no later than it (in its place among parallel sub-agents and the session)."""
    if call is not None:
        pos = next(i for i, st in enumerate(order) if st is call) + 1
    else:
        pos = 0 if steps and steps[0].timestamp else len(order)
    for st in steps:
        while pos < len(order) and _no_later(order[pos], st):
            pos += 1
        order.insert(pos, st)
        pos += 1


def _no_later(a: Step, b: Step) -> bool:
    return a.timestamp is not None and b.timestamp is not None and a.timestamp <= b.timestamp
