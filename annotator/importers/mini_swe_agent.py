"""mini-swe-agent trajectories: the v2 object (``trajectory_format: "mini-swe-agent-1.1"``,
``info``, ``messages``) and the older bare list of ``{role, content}`` messages.

The bare list has the shape of any chat list, so detection looks for what only this agent
writes: its fenced command block (```` ```mswea_bash_command ````) or its submit sentinel.
Each assistant message becomes a thought (the text before the command) and a tool call (the
command, or the ``tool_calls`` of tool-calling models); the message after it is the tool
result, with the exit code from ``<returncode>`` or ``extra.returncode``. ``info.exit_status``
and ``info.submission`` are hidden metadata; a run that did not end in ``Submitted`` failed.

mini-swe-agent runs a turn's command only when the text holds exactly one command block; a
turn with none or several is rejected (a format error) and the next user message tells the
model so. Such a turn is a thought with no tool call (``format_error`` says how many blocks it
had) and the message after it is the environment's feedback, not a command's output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, stable_id
from annotator.importers.chat import CHAT_ROLES
from annotator.importers.detect import Head
from annotator.importers.reading import load_json
from annotator.importers.steps import StepList, as_int, fingerprint, json_text, obj, plain, seq, str_or_none
from annotator.models import HIDDEN, Step, Trajectory

MARKERS = ("mswea_bash_command", "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")
_FENCE = re.compile(r"```(?:mswea_bash_command|bash)[^\n]*\n(.*?)```", re.DOTALL)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def _calls(msg: dict, text: str) -> list[tuple[str, str, str | None]] | int:
    """(tool name, arguments, call id) of an assistant message; for a turn mini-swe-agent
    rejects (not exactly one command block), the number of blocks it had."""
    out = []
    for call in seq(msg.get("tool_calls")):
        if isinstance(call, dict):
            fn = obj(call.get("function"))
            out.append((str_or_none(fn.get("name")) or "bash", json_text(fn.get("arguments")) or "",
                        str_or_none(call.get("id"))))
    if not out:
        actions = seq(obj(msg.get("extra")).get("actions"))
        commands = [json_text(a.get("command")) for a in actions if isinstance(a, dict) and a.get("command")]
        if not commands:
            commands = _FENCE.findall(text)
            if len(commands) != 1:
                return len(commands)
        out = [("bash", cmd.strip(), None) for cmd in commands]
    return out


def message_steps(messages: list, path: Path) -> StepList:
    """Steps of mini-swe-agent messages."""
    out = StepList()
    open_calls: list[Step] = []
    rejected = False  # the previous assistant turn was a format error
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg:
            raise ImportFailure(str(path), "not a chat message (needs 'role')", where=f"messages[{i}]")
        out.ledger.mapped()
        role, sid, raw = msg.get("role"), f"messages[{i}]", plain(msg)
        text = as_text(msg.get("content"))
        extra = obj(msg.get("extra"))
        if role == "assistant":
            calls = _calls(msg, text)
            rejected = isinstance(calls, int)
            if rejected:
                out.add(id=f"{sid}.thought", kind="thought", role=role, agent="assistant", content=text, raw=raw,
                        attributes={"format_error": f"{calls} command blocks, not one: not run"})
                open_calls = []
                continue
            fence = _FENCE.search(text)
            thought = (text[: fence.start()] if fence else text).strip()
            if thought:
                out.add(id=f"{sid}.thought", kind="thought", role=role, agent="assistant", content=thought, raw=raw)
            open_calls = [out.add(id=f"{sid}.call[{j}]", kind="tool_call", role=role, agent="assistant",
                                  content=args, tool_name=name, tool_args=args, call_id=call_id or f"{sid}.call[{j}]",
                                  raw=raw) for j, (name, args, call_id) in enumerate(calls)]
        elif open_calls and role in ("user", "tool"):
            call = next((c for c in open_calls if c.call_id == msg.get("tool_call_id")), open_calls[0])
            open_calls.remove(call)
            code = extra.get("returncode")
            if code is None and (m := _RETURNCODE.search(text)):
                code = m.group(1)
            attrs = {"exit_code": as_int(code)} if as_int(code) is not None else {}
            out.add(id=sid, kind="tool_result", role=role, agent="environment", content=text, tool_name=call.tool_name,
                    call_id=call.call_id, attributes=attrs, raw=raw)
        elif (rejected or extra.get("interrupt_type") == "FormatError") and role in ("user", "tool"):
            rejected = False  # v2 marks the feedback itself with extra.interrupt_type
            out.add(id=sid, kind="message", role=role, agent="environment", content=text, raw=raw,
                    attributes={"format_error": True})
        else:
            kind = "system" if role == "system" else "message"
            out.add(id=sid, kind=kind, role=role, agent=role, content=text, raw=raw)
    return out


class MiniSWEAgent(Importer):
    name = "mini_swe_agent"
    description = "mini-swe-agent trajectory: v2 .traj.json object or the older bare message list"

    def sniff(self, head: Head) -> bool:
        if head.kind != "json":
            return False
        fmt = head.scalars.get("trajectory_format")
        if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
            return True
        marked = any(m in head.text for m in MARKERS)
        if head.root == "array":
            return marked and head.scalars.get("item.role") in CHAT_ROLES
        keys = head.keys("")
        return "messages" in keys and ("mini_version" in head.keys("info") or marked and "info" in keys)

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        raw = path.read_bytes()
        data = load_json(path, raw)
        info: dict = {}
        if isinstance(data, dict):
            messages = data.get("messages")
            info = obj(data.get("info"))
        else:
            messages = data
        if not isinstance(messages, list):
            raise ImportFailure(str(path), "expected a list of messages")
        steps = message_steps(messages, path)
        status = info.get("exit_status")
        outcome = "unknown" if not status or str(status).lower() == "submitted" else "failure"
        hidden = {k: info[k] for k in ("exit_status", "submission") if k in info}
        config = obj(info.get("config"))
        model_cfg = obj(config.get("model"))
        model = model_cfg.get("model_name")
        meta = {k: v for k, v in info.items() if k not in hidden and k != "config"}
        if isinstance(data, dict) and "trajectory_format" in data:
            meta["trajectory_format"] = data["trajectory_format"]
        traj = Trajectory(
            id=stable_id(self.name, fingerprint(raw)),
            source_format=self.name,
            source_path=str(path),
            title=path.name.split(".")[0],
            system="mini-swe-agent",
            model=model if isinstance(model, str) else None,
            task=next((s.content for s in steps.steps if s.role == "user"), None),
            outcome=outcome,
            metadata={**meta, HIDDEN: hidden},
            raw=raw,
            steps=steps.require(path, "messages"),
        )
        yield ImportedRecord(trajectory=finish(traj, opts), ledger=steps.ledger)
