"""Gemini CLI session files: ``~/.gemini/tmp/<project_hash>/chats/session-<date>-<id>.json``.

Gemini CLI's chat recording service writes one conversation record per session:
``{sessionId, projectHash, startTime, lastUpdated, messages, summary?}``. Each message has
``id``, ``timestamp``, ``type`` and ``content`` (text, or a list of parts in newer versions).
``user`` messages are the user's; ``gemini`` messages carry the model's ``thoughts`` (summaries
with ``subject`` and ``description``), ``toolCalls`` (``name``, ``args``, ``status`` and the
``result`` it returned as ``functionResponse`` parts, or ``resultDisplay``), ``tokens`` and
``model``; ``info``, ``warning`` and ``error`` messages are the CLI's own notices.

Each message becomes its steps: thoughts, then the text, then each tool call followed by its
result; the token counts go on the message's first step. The task is the first user message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, one_record, stable_id
from annotator.importers.detect import Head
from annotator.importers.media import media_text
from annotator.importers.reading import load_json
from annotator.importers.steps import StepList, as_int, fingerprint, json_text, obj, parse_time, plain, seq, str_or_none
from annotator.models import Trajectory

AGENT = "gemini"
#: The CLI's own notices, by message type, and the step kind each becomes.
_NOTICES = {"info": "event", "warning": "event", "error": "error"}


def _parts_text(value: object) -> str:
    """Text of message content or a tool result: a string, or parts (text, function responses, media)."""
    if value is None or isinstance(value, str):
        return value or ""
    parts = value if isinstance(value, list) else [value]
    out = []
    for part in parts:
        response = obj(obj(part).get("functionResponse")).get("response")
        if isinstance(response, dict):
            body = response.get("output", response.get("error", response))
            out.append(as_text(body))
        elif (media := media_text(part)) is not None:
            out.append(media)
        else:
            out.append(as_text(obj(part).get("text")) if "text" in obj(part) else as_text(part))
    return "\n".join(t for t in out if t)


def _message(out: StepList, i: int, msg: dict) -> None:
    kind = str_or_none(msg.get("type"))
    sid = f"messages[{i}]"
    base = dict(timestamp=parse_time(msg.get("timestamp")), raw=plain(msg))
    text = _parts_text(msg.get("content"))
    if kind == "user":
        out.add(id=sid, kind="message", role="user", agent="user", content=text, **base)
        return
    if kind in _NOTICES:
        out.add(id=sid, kind=_NOTICES[kind], role="system", agent="gemini-cli", content=text, group=kind, **base)
        return
    if kind != "gemini":
        out.unknown_event(str(kind), base["raw"], id=sid, timestamp=base["timestamp"])
        return
    first = len(out.steps)
    for j, thought in enumerate(seq(msg.get("thoughts"))):
        thought = obj(thought)
        subject, body = as_text(thought.get("subject")), as_text(thought.get("description"))
        out.add(id=f"{sid}.thoughts[{j}]", kind="thought", role="assistant", agent=AGENT,
                content=f"{subject}: {body}" if subject else body, **base)
    if text.strip():
        out.add(id=sid, kind="message", role="assistant", agent=AGENT, content=text, **base)
    for j, call in enumerate(seq(msg.get("toolCalls"))):
        call = obj(call)
        name, args = str_or_none(call.get("name")), json_text(call.get("args")) or ""
        call_id = str_or_none(call.get("id")) or f"{sid}.toolCalls[{j}]"
        when = parse_time(call.get("timestamp")) or base["timestamp"]
        out.add(id=f"{sid}.toolCalls[{j}]", kind="tool_call", role="assistant", agent=AGENT, tool_name=name,
                tool_args=args, call_id=call_id, content=f"{name}({args})", timestamp=when, raw=base["raw"])
        result = _parts_text(call.get("result")) if call.get("result") is not None else as_text(call.get("resultDisplay"))
        status = str_or_none(call.get("status"))
        attrs = {"status": status} if status else {}
        if status in ("error", "cancelled"):
            attrs["is_error"] = True
        out.add(id=f"{sid}.toolCalls[{j}].result", kind="tool_result", role="tool", agent="environment",
                tool_name=name, call_id=call_id, content=result, attributes=attrs, timestamp=when, raw=base["raw"])
    tokens = obj(msg.get("tokens"))
    if tokens and len(out.steps) > first:
        out.steps[first].tokens_in = as_int(tokens.get("input"))
        out.steps[first].tokens_out = as_int(tokens.get("output"))


class GeminiCLI(Importer):
    name = "gemini_cli"
    description = "Gemini CLI session file (~/.gemini/tmp/<project>/chats/session-*.json)"

    def sniff(self, head: Head) -> bool:
        if head.kind != "json" or head.root != "object":
            return False
        return {"sessionId", "messages"} <= head.keys("") and (
            "projectHash" in head.keys("") or head.scalars.get("messages.item.type") in ("user", "gemini"))

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        return one_record(path, lambda: self._record(path, opts))

    def _record(self, path: Path, opts: ImportOptions) -> ImportedRecord:
        raw = path.read_bytes()
        data = load_json(path, raw)
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            raise ImportFailure(str(path), "expected a Gemini CLI session object with a 'messages' list")
        out = StepList()
        for i, msg in enumerate(data["messages"]):
            if not isinstance(msg, dict):
                raise ImportFailure(str(path), "expected a message object", where=f"messages[{i}]")
            _message(out, i, msg)
            out.ledger.mapped()
        steps = out.require(path, "messages")
        session = str_or_none(data.get("sessionId")) or path.stem
        model = next((str_or_none(m.get("model")) for m in data["messages"] if m.get("model")), None)
        meta = {k: data[k] for k in ("sessionId", "projectHash", "startTime", "lastUpdated") if k in data}
        traj = Trajectory(
            id=stable_id(self.name, session, fingerprint(raw)),
            source_format=self.name,
            source_path=str(path),
            title=str_or_none(data.get("summary")) or f"gemini session {session}",
            system="Gemini CLI",
            model=model,
            task=next((s.content for s in steps if s.role == "user" and s.content.strip()), None),
            metadata=meta,
            raw=raw,
            steps=steps,
        )
        return ImportedRecord(trajectory=finish(traj, opts), ledger=out.ledger)
