"""Claude Code sessions: the transcript JSONL under ``~/.claude/projects/<cwd>/<session>.jsonl``
and the ``claude -p --output-format stream-json`` stream.

Claude Code often writes one API response over several lines (one content block each) that
share ``message.id``; their blocks are kept once each and the response's token usage is
counted once. ``tool_use`` blocks become tool calls and the ``tool_result`` blocks of the next
user line their results, paired by id. Sidechain lines (``isSidechain``: work of a sub-agent
started with the Task tool) are attributed to their own agent and hang under the call that
started them. ``summary`` lines give the title; a stream-json ``result`` line the outcome.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, register, stable_id
from annotator.importers.detect import Head
from annotator.importers.reading import iter_jsonl
from annotator.importers.steps import StepList, as_int, json_text, obj, parse_time, plain, seq, str_or_none
from annotator.models import HIDDEN, Trajectory

MAIN_AGENT = "claude"
_MESSAGE_TYPES = {"user", "assistant", "system", "summary"}
#: Line types that only record editor state: no step.
_STATE_LINES = {"file-history-snapshot", "queue-operation", "permission-mode", "custom-title", "tag"}
_SUBAGENT_TOOLS = {"Task", "Agent"}


class _Session:
    def __init__(self) -> None:
        self.out = StepList()
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
        if kind == "summary":
            self.title = self.title or as_text(rec.get("summary"))
        elif kind in ("user", "assistant"):
            self.message(lineno, rec, agent, base, ctx)
        elif kind == "system":
            if rec.get("subtype") == "init":
                self.model = self.model or str_or_none(rec.get("model"))
                self.meta.setdefault("tools", rec.get("tools"))
            text = as_text(rec.get("content")) or f"[{rec.get('subtype') or 'system'}]"
            self.out.add(id=f"line {lineno}", kind="system", role="system", agent="system", content=text,
                         **base, **ctx)
        elif kind == "result":
            self.result = plain(rec)
        elif kind not in _STATE_LINES:
            self.out.unknown_event(str(kind), base["raw"], id=f"line {lineno}", timestamp=base["timestamp"], **ctx)

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
        for j, block in enumerate(blocks):
            if not isinstance(block, dict):
                continue
            key = orjson.dumps(block, option=orjson.OPT_SORT_KEYS, default=str)
            if key in seen:
                continue
            seen.add(key)
            sid = f"line {lineno}[{j}]"
            btype = str_or_none(block.get("type"))
            if btype == "text":
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
            else:
                self.out.add(id=sid, kind="message", role=role, agent=who, content=f"[{btype}]", **base, **ctx)
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


@register
class ClaudeCode(Importer):
    name = "claude_code"
    description = "Claude Code session transcript JSONL (or claude -p --output-format stream-json)"

    def sniff(self, head: Head) -> bool:
        if head.kind != "jsonl":
            return False
        lines = [ln for ln in head.lines if isinstance(ln, dict)]
        stream_json = any(ln.get("type") == "result" and "subtype" in ln and "session_id" in ln for ln in lines)
        return any(_is_transcript(ln) for ln in lines) or stream_json

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        s = _Session()
        skipped = opts.extra.setdefault("skipped_lines", [])
        for lineno, rec in iter_jsonl(path, opts, skipped):
            s.line(lineno, rec, path)
        session = str(s.meta.get("sessionId") or s.meta.get("session_id") or path.stem)
        outcome, meta = "unknown", {"session": s.meta}
        if s.result is not None:
            outcome = "failure" if s.result.get("is_error") else "unknown"
            meta[HIDDEN] = {"result": s.result}
        agents = sorted({st.agent for st in s.out.steps if st.agent and st.agent not in ("user", "environment", "system")})
        meta["agents"] = agents
        traj = Trajectory(
            id=stable_id(self.name, session, path.name),
            source_format=self.name,
            source_path=str(path),
            title=s.title or f"claude session {session}",
            system="Claude Code",
            model=s.model,
            task=next((st.content for st in s.out.steps if st.role == "user" and st.kind == "message"), None),
            outcome=outcome,
            metadata=meta,
            raw=path.read_bytes(),
            steps=s.out.require(path, "messages"),
        )
        yield ImportedRecord(trajectory=finish(traj, opts), warnings=s.out.warnings())
