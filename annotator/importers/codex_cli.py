"""Codex CLI rollout files (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Every line is ``{"timestamp", "type", "payload"}``; line 1 is ``session_meta``. Codex writes
the conversation twice: as ``response_item`` payloads (the Responses API items the model saw)
and as ``event_msg`` notifications (``user_message``, ``agent_message`` ...) for its UI. Steps
come from ``response_item`` only, so nothing appears twice; ``event_msg`` lines contribute
what the items lack: per-turn token usage, command exit codes, errors and the final message.
Encrypted reasoning is never shown. :func:`rollout` is shared with the ITBench run importer,
whose agent is Codex.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


from annotator.errors import ImportFailure
from annotator.importers.base import (ImportedRecord, Importer, ImportOptions, as_text, finish, first_request,
                                      stable_id)
from annotator.importers.detect import Head
from annotator.importers.media import media_text, scrub_data_uris
from annotator.importers.reading import iter_jsonl
from annotator.importers.steps import StepList, as_int, compact, json_text, obj, parse_json_maybe, parse_time, plain
from annotator.importers.steps import str_or_none
from annotator.models import Step, Trajectory

_CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action",
          "web_search_call": "action", "mcp_call": "arguments"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "mcp_call_output"}
#: event_msg types that repeat a response item for the UI (left out: the item is the step).
_COPIES = {"user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content"}
#: event_msg types that only report progress to the UI.
_QUIET_EVENTS = {"task_started", "exec_command_begin", "exec_command_output_delta", "patch_apply_begin",
                 "patch_apply_end", "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin",
                 "web_search_end", "turn_diff", "get_history_entry_response", "plan_update"}
_CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")


@dataclass
class Rollout:
    """What a rollout file says: its steps and the session around them."""

    steps: StepList = field(default_factory=StepList)
    meta: dict = field(default_factory=dict)
    model: str | None = None
    final_message: str | None = None


def _part_text(part: object) -> str:
    if isinstance(part, dict) and "text" in part:
        return as_text(part["text"])
    media = media_text(part)
    return as_text(part) if media is None else media


def _text(content: object) -> str:
    """A content value as text: parts joined, images (``input_image``) as a placeholder."""
    if isinstance(content, list):
        return "\n".join(_part_text(p) for p in content)
    return scrub_data_uris(as_text(content))


class _Reader:
    def __init__(self) -> None:
        self.r = Rollout()
        self.results: dict[str, Step] = {}
        self.exit_codes: dict[str, object] = {}  # exec_command_end seen before its output

    def line(self, lineno: int, rec: object, path: Path) -> None:
        if not isinstance(rec, dict):
            raise ImportFailure(str(path), "expected a JSON object", where=f"line {lineno}")
        kind, payload = str_or_none(rec.get("type")), obj(rec.get("payload"))
        base = dict(timestamp=parse_time(rec.get("timestamp")), raw=plain(rec), id=f"line {lineno}")
        if kind == "response_item":
            self.item(payload, base)
            return
        if kind == "event_msg":
            self.event(payload, base)
            return
        if kind == "session_meta":
            self.r.meta.update({k: v for k, v in payload.items() if k != "instructions"})
        elif kind == "turn_context":
            self.r.model = self.r.model or str_or_none(payload.get("model"))
        elif kind == "compacted":
            self.r.steps.add(kind="system", role="system", agent="codex",
                             content="[context compacted] " + as_text(payload.get("message")), **base)
        else:
            self.r.steps.unknown_event(str(kind), plain(rec), timestamp=base["timestamp"], id=base["id"])
        self.r.steps.ledger.mapped()

    def item(self, p: dict, base: dict) -> None:
        out = self.r.steps
        ptype = str_or_none(p.get("type"))
        if ptype == "reasoning":
            text = "\n".join(_text(p.get(k)) for k in ("summary", "content") if p.get(k))
            if text.strip():
                out.ledger.mapped()
                out.add(kind="thought", role="assistant", agent="codex", content=text, **base)
            else:
                out.ledger.dropped("encrypted reasoning")  # nothing readable: never shown
            return
        out.ledger.mapped()
        if ptype == "message":
            role = str_or_none(p.get("role"))
            text = _text(p.get("content"))
            context = role in ("developer", "system") or text.lstrip().startswith(_CONTEXT_TAGS)
            out.add(kind="system" if context else "message", role=role,
                    agent="codex" if role == "assistant" else role, content=text, **base)
        elif ptype in _CALLS:
            args = json_text(p.get(_CALLS[ptype])) or ""
            name = str_or_none(p.get("name")) or ptype.removesuffix("_call")
            out.add(kind="tool_call", role="assistant", agent="codex", content=f"{name}({args})", tool_name=name,
                    tool_args=args, call_id=p.get("call_id") or p.get("id"), **base)
        elif ptype in _OUTPUTS:
            output = p.get("output")
            wrapped = parse_json_maybe(output)  # some versions wrap it: {"output": ..., "metadata": {exit_code}}
            attrs = {}
            if isinstance(wrapped, dict) and "output" in wrapped:
                meta = obj(wrapped.get("metadata"))
                attrs = {"exit_code": meta["exit_code"]} if meta.get("exit_code") is not None else {}
                output = wrapped["output"]
            step = out.add(kind="tool_result", role="tool", agent="environment", content=_text(output),
                           call_id=p.get("call_id"), attributes=attrs, **base)
            if step.call_id:
                self.results[step.call_id] = step
                if step.call_id in self.exit_codes:
                    step.attributes["exit_code"] = self.exit_codes.pop(step.call_id)
        else:
            out.unknown_event(f"response_item/{ptype}", base["raw"], timestamp=base["timestamp"], id=base["id"])

    def event(self, p: dict, base: dict) -> None:
        etype = str_or_none(p.get("type"))
        ledger = self.r.steps.ledger
        if etype in _COPIES:
            ledger.dropped("event_msg copy")
        elif etype in _QUIET_EVENTS:
            ledger.dropped("progress")
        elif etype in ("token_count", "exec_command_end"):
            ledger.folded("token usage" if etype == "token_count" else "exit code")
        else:
            ledger.mapped()
        if etype == "token_count":
            usage = obj(p.get("info")).get("last_token_usage")
            target = next((s for s in reversed(self.r.steps.steps) if s.role == "assistant"), None)
            if isinstance(usage, dict) and target is not None and target.tokens_in is None:
                target.tokens_in = as_int(usage.get("input_tokens"))
                target.tokens_out = as_int(usage.get("output_tokens"))
        elif etype == "exec_command_end":
            call_id, code = str_or_none(p.get("call_id")), p.get("exit_code")
            if call_id and code is not None:
                if call_id in self.results:
                    self.results[call_id].attributes["exit_code"] = code
                else:
                    self.exit_codes[call_id] = code
        elif etype == "task_complete":
            self.r.final_message = str_or_none(p.get("last_agent_message")) or self.r.final_message
        elif etype in ("error", "stream_error"):
            self.r.steps.add(kind="error", agent="codex", content=as_text(p.get("message")) or compact(p), **base)
        elif etype == "turn_aborted":
            self.r.steps.add(kind="event", agent="codex", content=f"[turn aborted] {as_text(p.get('reason'))}", **base)
        elif etype not in _QUIET_EVENTS and etype not in _COPIES:
            self.r.steps.unknown_event(f"event_msg/{etype}", base["raw"], timestamp=base["timestamp"], id=base["id"])


def rollout(path: Path, opts: ImportOptions, data: bytes | None = None) -> Rollout:
    """Read a rollout file (from ``data``, its bytes, when the caller holds them); bad lines fail
    it, or are skipped and counted with --skip-bad-lines."""
    reader = _Reader()
    skipped = opts.extra.setdefault("skipped_lines", [])
    for lineno, rec in iter_jsonl(path, opts, skipped, data):
        reader.line(lineno, rec, path)
    return reader.r


def is_rollout(head: Head) -> bool:
    first = head.lines[0] if head.kind == "jsonl" and head.lines else None
    return isinstance(first, dict) and first.get("type") == "session_meta" and isinstance(first.get("payload"), dict)


class CodexCLI(Importer):
    name = "codex_cli"
    description = "Codex CLI session rollout JSONL (session_meta, response_item, event_msg)"

    def sniff(self, head: Head) -> bool:
        return is_rollout(head)

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        raw = path.read_bytes()
        r = rollout(path, opts, raw)
        session = str(r.meta.get("id") or path.stem)
        traj = Trajectory(
            id=stable_id(self.name, session),
            source_format=self.name,
            source_path=str(path),
            title=f"codex session {session}",
            system="Codex CLI",
            model=r.model,
            task=first_request(r.steps.steps),
            metadata={"session": r.meta, "final_message": r.final_message},
            raw=raw,
            steps=r.steps.require(path, "response items"),
        )
        yield ImportedRecord(trajectory=finish(traj, opts), ledger=r.steps.ledger)
