"""Stirrup runs (ArtificialAnalysis/Stirrup, the harness ITBench-AA runs every model through).

``Agent.run`` returns ``(finish_params, history, run_metadata)``; ``history`` is a list of
message groups, a new group starting each time the context was summarised. A run is read as
it is saved to JSON: the bare ``history`` (a list of groups of serialised messages), or an
object holding it as ``history`` (or ``message_history``) beside ``finish_params`` and
``run_metadata``. Stirrup's resume cache, ``~/.cache/stirrup/<task_hash>/state.json``
(``full_msg_history`` and the current ``msgs``, ``task_hash``, ``agent_name``), is read too.

Messages are tagged by ``role``: ``system``; ``user`` (with ``kind``: ``user``, or ``summary``
and ``turn_warning``, which the agent injects); ``assistant``, in v0.2 an ordered list of
``blocks`` (``text``, the reasoning kinds, ``tool_call`` ``{name, arguments, tool_call_id}``,
media), in v0.1 ``content``, ``reasoning`` and ``tool_calls``, with ``token_usage``
``{input, answer, reasoning}``; and ``tool`` (``content``, ``tool_call_id``, ``name``,
``success``). A group after the first opens with the task's messages again: that copy is folded
into the first. The ``finish`` tool's ``reason`` and ``paths`` are the run's final answer.

A sub-agent (an ``Agent`` used as a tool through ``to_tool()``) runs inside the parent's tool call
and leaves its own history in the parent's ``run_metadata`` under the tool's name: a list of
``SubAgentMetadata`` (``{message_history, run_metadata}``), one per call that ran, in call order
(tools run one after another; a call whose arguments were refused, ``args_was_valid: false``,
ran nothing). Each history is read like the run's, its steps placed right after the delegating
call, attributed to the sub-agent by name and parented to that call, its task the delegating
agent's message to it; nested sub-agents the same way. A run the calls do not account for is
still imported, after the rest, with a warning. A v0.2 cache keeps ``run_metadata`` per turn
(``run_metadata_by_turn``), merged in turn order.

An ITBench-AA run names its diagnosis file among the ``finish`` paths (``agent_output.json``,
an object with ``entities``): with ``--ground-truth``, one found beside the run file is scored the way the
``itbench_run`` importer scores it, for the incident the saved object names (``incident_id``)
or, failing that, the run file's folder.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.base import (ImportedRecord, Importer, ImportOptions, as_text, finish, first_request,
                                      one_record, stable_id)
from annotator.importers.detect import Head
from annotator.importers.itbench import grade
from annotator.importers.media import base64_size, placeholder
from annotator.importers.reading import load_json
from annotator.importers.steps import StepList, as_int, fingerprint, obj, parse_json_maybe, plain, seq, str_or_none
from annotator.models import HIDDEN, Step, Trajectory

AGENT = "agent"
HARNESS = "stirrup"
FINISH_TOOL = "finish"
#: Text the agent loop sends as the user when the model answered without calling a tool.
_CONTINUE = "Please continue the task"
_MEDIA_BLOCKS = {"image_content_block": "image", "video_content_block": "video", "audio_content_block": "audio"}
_REASONING = {"reasoning", "signed_reasoning", "redacted_reasoning", "reasoning_ref", "encrypted_reasoning"}


def _content(value: object) -> str:
    """Message content: text, or a list of text and base64 media blocks."""
    if isinstance(value, (str, type(None))):
        return value or ""
    out = []
    for item in seq(value) if isinstance(value, list) else [value]:
        kind = _MEDIA_BLOCKS.get(str(obj(item).get("kind")))
        if kind:
            data = obj(item).get("data")
            out.append(placeholder(kind, size=base64_size(data) if isinstance(data, str) else None))
        else:
            out.append(as_text(item))
    return "\n".join(out)


def _blocks(msg: dict) -> list[dict]:
    """An assistant message's blocks in order, the v0.1 channels read as v0.2 blocks."""
    if isinstance(msg.get("blocks"), list):
        return [obj(b) for b in msg["blocks"]]
    blocks: list[dict] = []
    reasoning = obj(msg.get("reasoning"))
    if reasoning:
        blocks.append({"kind": "reasoning", "content": reasoning.get("content")})
    content = msg.get("content")
    for item in content if isinstance(content, list) else [content]:
        if isinstance(item, str) and item:
            blocks.append({"kind": "text", "text": item})
        elif isinstance(item, dict):
            blocks.append(item)
    blocks += [{**obj(c), "kind": "tool_call"} for c in seq(msg.get("tool_calls"))]
    return blocks


class _Run:
    """One agent's history walked into the shared step list: the root run, or a sub-agent's,
    whose steps follow the call that delegated to it."""

    def __init__(self, path: Path, out: StepList, metadata: dict, *, agent: str = AGENT, where: str = "history",
                 parent: Step | None = None, delegator: str | None = None) -> None:
        self.path, self.out, self.agent, self.where = path, out, agent, where
        self.parent, self.delegator = parent, delegator
        self.finish: dict | None = None
        self.injected_reply = False  # the next user message is the agent's own acknowledgement
        #: The sub-agent runs ``run_metadata`` holds, by tool name, in the order they ran.
        self.subagents = {name: deque(enumerate(runs)) for name, runs in sub_agent_runs(metadata).items()}
        self.invalid: set[object] = set()
        place = where.removesuffix(".message_history")  # where a sub-agent's run is in the file
        self.meta_where = "run_metadata" if delegator is None else f"{place}.run_metadata"
        #: A sub-agent's call ids are prefixed with its place, so they cannot meet the parent's.
        self.call_prefix = "" if delegator is None else f"{place}:"

    def walk(self, groups: list) -> None:
        """Every message of every group; a group after the first that opens with the task's
        messages again has that copy folded into the first."""
        if not all(isinstance(g, list) for g in groups):
            raise ImportFailure(str(self.path), "expected Stirrup message groups: a list of lists of messages",
                                where=self.where)
        # a call whose arguments Stirrup refused never ran, so left no sub-agent run behind
        self.invalid = {m.get("tool_call_id") for g in groups for m in g
                        if isinstance(m, dict) and m.get("role") == "tool" and m.get("args_was_valid") is False}
        first_context = orjson.dumps(_task_context(groups[0])) if groups else b""
        for g, group in enumerate(groups):
            repeat = len(_task_context(group)) if g and orjson.dumps(_task_context(group)) == first_context else 0
            self.out.ledger.folded("task context repeated after a summary", repeat)
            for i, msg in enumerate(group):
                if not _is_message(msg):
                    raise ImportFailure(str(self.path), "not a Stirrup message (needs 'role')",
                                        where=f"{self.where}[{g}][{i}]")
                if i >= repeat:
                    self.message(g, i, msg)
                    self.out.ledger.mapped()
        for name, left in self.subagents.items():
            for k, run in left:  # more runs than calls: shown after the rest, under no call
                self.out.ledger.warn("incomplete", f"a run of sub-agent {name!r} with no call that delegated to it")
                self.delegate(name, k, run, None)

    def add(self, **fields) -> Step:
        if self.parent is not None:
            fields["parent"] = self.parent.index
        if fields.get("call_id") is not None:
            fields["call_id"] = f"{self.call_prefix}{fields['call_id']}"
        return self.out.add(**fields)

    def message(self, g: int, i: int, msg: dict) -> None:
        role, sid, raw = str_or_none(msg.get("role")), f"{self.where}[{g}][{i}]", plain(msg)
        base = dict(raw=raw, group=f"context {g + 1}" if g else None)
        if role == "system":
            self.add(id=sid, kind="system", role=role, agent="system", content=_content(msg.get("content")), **base)
        elif role == "user":
            self.user(sid, msg, base)
        elif role == "assistant":
            self.assistant(sid, msg, base)
        elif role == "tool":
            success = msg.get("success")
            attrs = {k: msg[k] for k in ("success", "args_was_valid") if k in msg}
            if success is False:
                attrs["is_error"] = True
            self.add(id=sid, kind="tool_result", role=role, agent="environment", tool_name=msg.get("name"),
                     call_id=msg.get("tool_call_id"), content=_content(msg.get("content")), attributes=attrs, **base)
        else:
            step = self.out.unknown_event(str(role), raw, id=sid)
            step.parent = self.parent.index if self.parent is not None else None

    def user(self, sid: str, msg: dict, base: dict) -> None:
        kind, text = str_or_none(msg.get("kind")) or "user", _content(msg.get("content"))
        injected = kind != "user" or self.injected_reply or text.strip() == _CONTINUE
        self.injected_reply = kind == "summary"
        # a sub-agent's task is the message of the agent that delegated it
        speaker, recipient = ("user", None) if self.delegator is None else (self.delegator, self.agent)
        self.add(id=sid, kind="system" if injected else "message", role="user",
                 agent=HARNESS if injected else speaker, recipient=None if injected else recipient, content=text,
                 attributes={"stirrup_kind": kind} if kind != "user" else {}, **base)

    def assistant(self, sid: str, msg: dict, base: dict) -> None:
        first = len(self.out.steps)
        for j, block in enumerate(_blocks(msg)):
            kind, bid = str_or_none(block.get("kind")), f"{sid}.blocks[{j}]"
            if kind == "text":
                if as_text(block.get("text")).strip():
                    self.add(id=bid, kind="message", role="assistant", agent=self.agent,
                             content=as_text(block.get("text")), **base)
            elif kind in _REASONING:
                text = as_text(block.get("content")) or "\n".join(map(as_text, seq(block.get("summary"))))
                self.add(id=bid, kind="thought", role="assistant", agent=self.agent,
                         content=text or f"[{kind.replace('_', ' ')}]", **base)
            elif kind == "tool_call":
                self.call(bid, block, base)
            elif kind in _MEDIA_BLOCKS:
                self.add(id=bid, kind="message", role="assistant", agent=self.agent, content=_content([block]), **base)
            else:
                step = self.out.unknown_event(f"assistant block {kind}", plain(block), id=bid)
                step.parent = self.parent.index if self.parent is not None else None
        usage = obj(msg.get("token_usage"))
        if usage and len(self.out.steps) > first:
            answer = as_int(usage.get("answer") if "answer" in usage else usage.get("output")) or 0
            self.out.steps[first].tokens_in = as_int(usage.get("input"))
            self.out.steps[first].tokens_out = answer + (as_int(usage.get("reasoning")) or 0)

    def call(self, bid: str, block: dict, base: dict) -> None:
        name, args, call_id = str_or_none(block.get("name")), as_text(block.get("arguments")), block.get("tool_call_id")
        step = self.add(id=bid, kind="tool_call", role="assistant", agent=self.agent, tool_name=name, tool_args=args,
                        call_id=call_id, content=f"{name}({args})", **base)
        if name == FINISH_TOOL:
            self.finish = obj(parse_json_maybe(args)) or {"reason": args}
        runs = self.subagents.get(name or "")
        if runs and call_id not in self.invalid:
            k, run = runs.popleft()
            self.delegate(name, k, run, step)

    def delegate(self, name: str, k: int, run: dict, call: Step | None) -> None:
        """The sub-agent's own history, as steps of that agent right after the delegating call."""
        where = f"{self.meta_where}.{name}[{k}].message_history"
        inner = obj(run.get("run_metadata"))
        if call is not None:
            call.attributes["sub_agent_run"] = {"run": k, "model": obj(inner.get("_model_speed")).get("model_slug")}
        sub = _Run(self.path, self.out, inner, agent=name, where=where, parent=call, delegator=self.agent)
        sub.walk(seq(run.get("message_history")))


def sub_agent_runs(metadata: dict) -> dict[str, list[dict]]:
    """The sub-agent runs in a ``run_metadata``: under a tool's name, the list of its
    ``SubAgentMetadata`` (``{message_history, run_metadata}``), one per call, in call order."""
    return {name: [obj(r) for r in runs] for name, runs in metadata.items()
            if isinstance(runs, list) and runs and all(isinstance(obj(r).get("message_history"), list) for r in runs)}


def without_histories(metadata: dict) -> dict:
    """``run_metadata`` with each sub-agent run's history (imported as steps) replaced by its size."""
    runs = sub_agent_runs(metadata)
    return {name: [{"messages": sum(len(seq(g)) for g in seq(r.get("message_history"))),
                    "run_metadata": without_histories(obj(r.get("run_metadata")))} for r in runs[name]]
            if name in runs else value for name, value in metadata.items()}


def _groups(data: object) -> tuple[list, dict]:
    """The message groups of a saved run or cache, and the rest of the object."""
    if isinstance(data, list):
        return data, {}
    data = obj(data)
    if "full_msg_history" in data:  # the resume cache: earlier groups, then the active one
        return [*seq(data["full_msg_history"]), seq(data.get("msgs"))], {k: v for k, v in data.items()
                                                                       if k not in ("full_msg_history", "msgs")}
    key = "history" if "history" in data else "message_history"
    return seq(data.get(key)), {k: v for k, v in data.items() if k != key}


def _run_metadata(saved: dict) -> dict:
    """A saved run's ``run_metadata``; a v0.2 cache keeps it per turn (``run_metadata_by_turn``,
    in turn order), merged here the way ``Agent.run`` merges it."""
    if isinstance(saved.get("run_metadata_by_turn"), dict):
        merged: dict = {}
        for turn in saved["run_metadata_by_turn"].values():
            for name, value in obj(turn).items():
                earlier = merged.get(name)
                merged[name] = [*earlier, *value] if isinstance(earlier, list) and isinstance(value, list) else value
        return merged
    return obj(saved.get("run_metadata"))


def _is_message(item: object) -> bool:
    return isinstance(item, dict) and item.get("role") in ("system", "user", "assistant", "tool")


def _task_context(group: list) -> list:
    """The messages a group opens with before the first assistant turn or summary."""
    head = []
    for m in group:
        if obj(m).get("role") == "assistant" or obj(m).get("kind") == "summary":
            break
        head.append(m)
    return head


class Stirrup(Importer):
    name = "stirrup"
    description = "Stirrup run history saved as JSON (groups of messages), or its resume cache state.json"

    def sniff(self, head: Head) -> bool:
        if head.kind != "json":
            return False
        if head.root == "array":
            return "role" in head.keys("item.item") and (
                bool({"kind", "blocks", "token_usage", "tool_call_id"} & head.keys("item.item")))
        keys = head.keys("")
        if {"full_msg_history", "task_hash"} <= keys:
            return True
        inner = head.keys("history.item.item") | head.keys("message_history.item.item")
        return "role" in inner and bool({"finish_params", "run_metadata"} & keys)

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        return one_record(path, lambda: self._record(path, opts))

    def _record(self, path: Path, opts: ImportOptions) -> ImportedRecord:
        raw = path.read_bytes()
        groups, saved = _groups(load_json(path, raw))
        if not groups:
            raise ImportFailure(str(path), "expected Stirrup message groups: a list of lists of messages")
        metadata = _run_metadata(saved)
        run = _Run(path, StepList(), metadata)
        run.walk(groups)
        steps = run.out.require(path, "messages")
        finish_params = obj(saved.get("finish_params")) or run.finish
        model = str_or_none(saved.get("model")) or str_or_none(obj(metadata.get("_model_speed")).get("model_slug"))
        meta: dict = {k: saved[k] for k in ("task_hash", "agent_name", "timestamp", "incident_id") if k in saved}
        if finish_params:
            meta["finish"] = finish_params
        if metadata:
            meta["run_metadata"] = without_histories(metadata)
        outcome, score = "unknown", None
        diagnosis = _diagnosis(path, finish_params)
        if diagnosis is not None:
            meta["diagnosis"] = diagnosis
            incident = str_or_none(saved.get("incident_id")) or path.parent.name
            outcome, score, graded = grade(diagnosis, incident, opts, run.out.ledger)
            if graded:
                meta[HIDDEN] = graded
        traj = Trajectory(
            id=stable_id(self.name, path.name, fingerprint(raw)),
            source_format=self.name,
            source_path=str(path),
            title=f"stirrup run {saved.get('agent_name') or path.parent.name}/{path.stem}",
            system="Stirrup",
            model=model,
            benchmark="ITBench" if diagnosis is not None else None,
            task=first_request(steps),
            outcome=outcome,
            score=score,
            metadata=meta,
            raw=raw,
            steps=steps,
        )
        return ImportedRecord(trajectory=finish(traj, opts), ledger=run.out.ledger)


def _diagnosis(path: Path, finish_params: dict | None) -> dict | None:
    """The ITBench diagnosis (a JSON object with ``entities``) a run reported among its finish
    paths, read from beside the run file."""
    for name in seq(obj(finish_params).get("paths")):
        if not isinstance(name, str) or not name.endswith(".json"):
            continue
        found = path.parent / Path(name).name
        if found.is_file():
            diagnosis = load_json(found)
            if isinstance(diagnosis, dict) and isinstance(diagnosis.get("entities"), list):
                return diagnosis
    return None
