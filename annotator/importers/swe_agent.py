"""SWE-agent ``.traj`` files: thought, action and observation per step.

A run file has ``trajectory`` (one entry per agent step: ``thought``, ``action``,
``observation``, ``execution_time``) and ``history`` (the chat as the model saw it, with
``message_type``, the acting ``agent`` and, for function-calling agents, ``tool_calls`` and
``tool_call_ids``). Steps come from ``trajectory`` — the prompt and task from the history
items before the first action — and take tool names and call ids from the matching history
action. Demonstrations may carry only ``history``; they are read from it directly. A history
item's ``agent`` names whose history it is (``primary``): the system prompt and the user
messages are the harness's words to that agent (their role speaks, the agent is the recipient),
observations the environment's.

SWE-agent 0.x puts a whole worked example of another issue into the prompt, as history items
marked ``is_demo``. That demonstration is not part of the run: it is left out (counted as
dropped, reason ``demonstration``) and the task is the first user message of the run itself,
the issue. 0.x files name no model; their run folder does
(``<model>__<data>__<config>__t-<temperature>__...``), and the model is read from it.

The outcome the file carries, ``info.exit_status`` and ``info.submission``, goes to hidden
metadata. Only a run that ended without submitting is a known failure: whether a submission
resolved the issue comes from a separate SWE-bench report, so it stays ``unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, stable_id
from annotator.importers.detect import Head
from annotator.importers.reading import load_json
from annotator.importers.steps import StepList, fingerprint, json_text, obj, parse_json_maybe, plain, seq, str_or_none
from annotator.models import HIDDEN, Step, Trajectory

_RUN_KEYS = {"info", "environment", "replay_config"}
#: A SWE-agent 0.x run folder: ``<model>__<data>__<config>__t-0.00__p-0.95__c-3.00__install-1``.
_RUN_DIR = re.compile(r"^(?P<model>[^_][^/]*?)__.+__t-\d")


def is_demo(item: object) -> bool:
    """Whether a history item belongs to the in-context demonstration (``is_demo``, a bool or its text)."""
    return isinstance(item, dict) and str(item.get("is_demo")).lower() == "true"


def _call_parts(action: str, calls: list) -> list[tuple[str | None, str, str | None]]:
    """(name, arguments, call id) per call: function-calling ``tool_calls``, else the command."""
    out = []
    for call in seq(calls):
        if isinstance(call, dict):
            fn = obj(call.get("function"))
            out.append((fn.get("name"), json_text(fn.get("arguments")) or "", call.get("id")))
    if not out and action.strip():
        out.append((action.split(maxsplit=1)[0], action, None))
    return out


class _Builder:
    def __init__(self) -> None:
        self.out = StepList()
        self.open_calls: list[Step] = []

    def calls(self, action: str, calls: list, agent: str, sid: str, raw: object) -> None:
        self.open_calls = []
        parts = _call_parts(action, calls)
        for j, (name, args, call_id) in enumerate(parts):
            content = action if len(parts) == 1 and action.strip() else f"{name}({args})"
            self.open_calls.append(self.out.add(
                id=f"{sid}.call[{j}]", kind="tool_call", role="assistant", agent=agent, content=content,
                tool_name=name, tool_args=args, call_id=call_id, raw=raw))

    def result(self, text: str, call_ids: list, sid: str, raw: object, **extra) -> None:
        call = next((c for c in self.open_calls if c.call_id in call_ids), None) if call_ids else None
        call = call or (self.open_calls[0] if self.open_calls else None)
        step = self.out.add(id=sid, kind="tool_result", role="tool", agent="environment", content=text,
                            tool_name=call.tool_name if call else None,
                            call_id=call.call_id if call else None, raw=raw, **extra)
        if call is not None:  # ids repeat in some files: pair with the call just made, not the first
            step.link, call.link = call.index, step.index
            self.open_calls.remove(call)

    def message(self, item: dict, sid: str) -> None:
        """A system or user message: the harness's words to the agent whose history holds it
        (``agent``, e.g. ``primary``), spoken by its role, not by that agent."""
        role = item.get("role")
        kind = "system" if role == "system" or item.get("message_type") == "system_prompt" else "message"
        owner = item.get("agent")
        self.out.add(id=sid, kind=kind, role=role, agent=role or owner, recipient=owner if role else None,
                     content=as_text(item.get("content")), group=item.get("message_type"), raw=plain(item))


def _from_trajectory(b: _Builder, history: list, trajectory: list) -> None:
    ledger = b.out.ledger
    run = [h for h in history if not is_demo(h)]
    actions = [h for h in run if isinstance(h, dict) and h.get("role") == "assistant"]
    first_action = next((i for i, h in enumerate(history) if isinstance(h, dict) and h.get("role") == "assistant"
                         and not is_demo(h)), len(history))
    for i, item in enumerate(history[:first_action]):
        if is_demo(item):
            ledger.dropped("demonstration")
        elif isinstance(item, dict):
            b.message(item, f"history[{i}]")
            ledger.mapped()
        else:
            ledger.dropped("not a message object")
    rest = history[first_action:]
    ledger.dropped("demonstration", sum(map(is_demo, rest)))
    ledger.folded("history copy of a trajectory entry", sum(not is_demo(h) for h in rest))
    for k, entry in enumerate(trajectory):
        if not isinstance(entry, dict):
            ledger.dropped("not a trajectory entry object")
            continue
        ledger.mapped()
        h = actions[k] if k < len(actions) else {}
        agent = h.get("agent") or "main"
        raw = plain(entry)
        thought = as_text(entry.get("thought"))
        if thought:
            b.out.add(id=f"trajectory[{k}].thought", kind="thought", role="assistant", agent=agent, content=thought,
                      raw=raw)
        b.calls(as_text(entry.get("action")), h.get("tool_calls") or [], agent, f"trajectory[{k}]", raw)
        extra = {"attributes": {"execution_time": entry["execution_time"]}} if "execution_time" in entry else {}
        b.result(as_text(entry.get("observation")), [c.call_id for c in b.open_calls],
                 f"trajectory[{k}].observation", raw, **extra)


def _from_history(b: _Builder, history: list) -> None:
    for i, item in enumerate(history):
        if is_demo(item):
            b.out.ledger.dropped("demonstration")
            continue
        if not isinstance(item, dict):
            b.out.ledger.dropped("not a message object")
            continue
        b.out.ledger.mapped()
        sid = f"history[{i}]"
        role, agent = item.get("role"), item.get("agent") or item.get("role")
        if role == "assistant":
            thought = as_text(item.get("thought") or item.get("content"))
            if thought:
                b.out.add(id=f"{sid}.thought", kind="thought", role=role, agent=agent, content=thought, raw=plain(item))
            b.calls(as_text(item.get("action")), item.get("tool_calls") or [], agent, sid, plain(item))
        elif role == "tool" or (item.get("message_type") == "observation" and b.open_calls):
            b.result(as_text(item.get("content")), seq(item.get("tool_call_ids")), sid, plain(item))
        else:
            b.message(item, sid)


def _outcome(info: dict) -> str:
    status = info.get("exit_status")
    if not isinstance(status, str) or not status or status.lower().startswith("submitted"):
        return "unknown"
    return "failure"


class SWEAgent(Importer):
    name = "swe_agent"
    description = "SWE-agent .traj run or demonstration (trajectory / history with message_type)"

    def sniff(self, head: Head) -> bool:
        if head.kind != "json" or head.root != "object":
            return False
        keys = head.keys("")
        if "trajectory" in keys and {"action", "observation"} <= head.keys("trajectory.item"):
            return True
        return "history" in keys and "message_type" in head.keys("history.item") and (
            bool(keys & _RUN_KEYS) or keys == {"history"})

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        raw = path.read_bytes()
        data = load_json(path, raw)
        if not isinstance(data, dict):
            raise ImportFailure(str(path), "expected a SWE-agent .traj object")
        history = data.get("history") or []
        trajectory = data.get("trajectory") or []
        if not isinstance(history, list) or not isinstance(trajectory, list):
            raise ImportFailure(str(path), "'history' and 'trajectory' must be lists")
        b = _Builder()
        if trajectory:
            _from_trajectory(b, history, trajectory)
        else:
            _from_history(b, history)
        info = obj(data.get("info"))
        config = obj(parse_json_maybe(data.get("replay_config")))
        model = str_or_none(obj(obj(config.get("agent")).get("model")).get("name"))
        if model is None and (run_dir := _RUN_DIR.match(path.parent.name)):
            model = run_dir["model"]
        problem = obj(config.get("problem_statement"))
        instance = path.stem
        hidden = {k: info[k] for k in ("exit_status", "submission") if k in info}
        visible = {k: v for k, v in info.items() if k not in hidden and not k.startswith("edited_files")}
        hidden.update({k: v for k, v in info.items() if k.startswith("edited_files")})
        task = str_or_none(problem.get("text")) or next(
            (s.content for s in b.out.steps if s.role == "user" and s.content.strip()), None)
        traj = Trajectory(
            id=stable_id(self.name, instance, fingerprint(raw)),
            source_format=self.name,
            source_path=str(path),
            title=instance,
            system="SWE-agent",
            model=model,
            task=task,
            outcome=_outcome(info),
            metadata={"instance_id": problem.get("id") or instance, "environment": data.get("environment"),
                      "info": visible, HIDDEN: hidden},
            raw=raw,
            steps=b.out.require(path, "trajectory entries or history items"),
        )
        yield ImportedRecord(trajectory=finish(traj, opts), ledger=b.out.ledger)
