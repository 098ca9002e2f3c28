"""OpenAI Chat Completions message lists, as a format and as a building block.

A bare list of messages, or an object with ``messages``, is a trajectory of its own; the same
message shape appears inside many other formats (AG2 chats in MAD, SWE-agent history,
tau-bench), which reuse :func:`chat_steps`. An assistant message with N ``tool_calls`` becomes
its text (if any) plus N tool_call steps; a ``tool`` message becomes a tool_result linked by
``tool_call_id``. A message's ``name`` names the agent that spoke, except on ``tool`` and
``function`` messages, where it is the tool's name: their agent is the environment.

A litellm completion log (``{"messages", "response", "kwargs", "cost", ...}``, one file per call,
as litellm's logging callbacks and the OpenHands SDK write them) is the messages sent plus the
``response``: its message is the last step, and its model and token usage are the trajectory's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import (
    ImportedRecord,
    Importer,
    ImportOptions,
    StreamedRecord,
    as_text,
    finish,
    overridden,
    record_values,
    stable_id,
)
from annotator.importers.detect import Head
from annotator.importers.reading import load_json, stream_members, streamed
from annotator.importers.steps import as_int, json_text, obj, plain, seq, str_or_none
from annotator.models import Step, Trajectory

CHAT_ROLES = {"system", "user", "assistant", "tool", "function", "developer"}


def chat_steps(messages: list, path: Path, start: int = 0, where: str = "messages") -> list[Step]:
    """Steps for a list of chat messages; ImportFailure naming the first message that is not one."""
    return list(iter_chat_steps(messages, path, start, where))


def iter_chat_steps(messages: Iterable, path: Path, start: int = 0, where: str = "messages") -> Iterator[Step]:
    """:func:`chat_steps` one at a time, for messages streamed from a file too big to hold."""
    n = start
    for i, msg in enumerate(messages):
        steps: list[Step] = []
        if not isinstance(msg, dict) or ("role" not in msg and "name" not in msg):
            raise ImportFailure(str(path), "not a chat message (needs 'role')", where=f"{where}[{i}]")
        role = msg.get("role")
        agent = "environment" if role in ("tool", "function") else msg.get("name") or role
        raw = plain(msg)
        base = dict(agent=agent, role=role, raw=raw)
        text = as_text(msg.get("content"))
        reasoning = msg.get("reasoning_content")
        if reasoning:
            steps.append(Step(index=n + len(steps), id=f"{where}[{i}].reasoning", kind="thought",
                              content=as_text(reasoning), **base))
        calls = msg.get("tool_calls") or []
        if msg.get("function_call"):
            calls = [{"id": None, "function": msg["function_call"]}]
        if not isinstance(calls, list):
            raise ImportFailure(str(path), "'tool_calls' must be a list", where=f"{where}[{i}]")
        if role in ("tool", "function"):
            steps.append(Step(index=n + len(steps), id=f"{where}[{i}]", kind="tool_result", content=text,
                              tool_name=msg.get("name"), call_id=msg.get("tool_call_id"), **base))
            n += len(steps)
            yield from steps
            continue
        if text or not calls:
            kind = "system" if role in ("system", "developer") else "message"
            steps.append(Step(index=n + len(steps), id=f"{where}[{i}]", kind=kind, content=text, **base))
        for j, call in enumerate(calls):
            fn = call.get("function") if isinstance(call, dict) else None
            fn = fn if isinstance(fn, dict) else {}
            args = fn.get("arguments")
            args_text = json_text(args) or ""
            steps.append(Step(index=n + len(steps), id=f"{where}[{i}].tool_calls[{j}]", kind="tool_call",
                              content=f"{fn.get('name', '?')}({args_text})", tool_name=fn.get("name"),
                              tool_args=args_text, call_id=call.get("id") if isinstance(call, dict) else None,
                              **base))
        n += len(steps)
        yield from steps


def looks_like_chat(items: object) -> bool:
    """Whether the first items look like chat messages (role + content)."""
    return isinstance(items, dict) and isinstance(items.get("role"), str) and items["role"] in CHAT_ROLES


class OpenAIChat(Importer):
    name = "openai_chat"
    self_contained = True
    description = "OpenAI chat message list: a bare list, or an object with 'messages' (tool_calls included)"
    fallback = True

    def sniff(self, head: Head) -> bool:
        if head.kind != "json":
            return False
        if head.root == "array":
            keys = head.keys("item")
            return "role" in keys and head.scalars.get("item.role") in CHAT_ROLES
        return "messages" in head.keys("") and head.scalars.get("messages.item.role") in CHAT_ROLES

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord | StreamedRecord]:
        chat = _Chat(self.name, path)
        if streamed(path):  # held whole, a chat of a million messages takes gigabytes
            yield StreamedRecord(steps=chat.steps(stream_members(path, "messages", chat.meta)),
                                 rest=lambda: chat.record(opts), raw_file=path)
            return
        raw = path.read_bytes()
        with record_values(path):
            data = load_json(path, raw)
            if isinstance(data, dict):
                messages = data.get("messages")
                chat.meta.update((k, v) for k, v in data.items() if k != "messages")
            else:
                messages = data
            if not isinstance(messages, list):
                raise ImportFailure(str(path), "expected a list of chat messages")
            item = chat.record(opts, list(chat.steps(messages)), raw)
        yield item


class _Chat:
    """One chat file read: its steps as they are made from its messages (and its litellm
    ``response``), then the record, from what the steps and the file's other members said."""

    def __init__(self, name: str, path: Path) -> None:
        self.name, self.path = name, path
        self.meta: dict = {}
        self.ledger = Ledger()
        self.first: list = []  # the first message, part of the trajectory's id
        self.task: str | None = None
        self.model: str | None = None

    def _counted(self, messages: Iterable) -> Iterator[object]:
        for msg in messages:
            self.ledger.mapped()
            if not self.first:
                self.first.append(msg)
            yield msg

    def steps(self, messages: Iterable) -> Iterator[Step]:
        """The steps of ``messages``, then of the response; ``meta`` is complete once the messages are."""
        n = 0
        for step in iter_chat_steps(self._counted(messages), self.path):
            n += 1
            if self.task is None and step.role == "user":
                self.task = step.content
            yield step
        meta = self.meta
        self.model = meta.get("model") if isinstance(meta.get("model"), str) else None
        response = obj(meta.pop("response", None))
        choices = [c for c in seq(response.get("choices")) if isinstance(obj(c).get("message"), dict)]
        for i, choice in enumerate(choices):
            answer = chat_steps([choice["message"]], self.path, start=n, where=f"response.choices[{i}]")
            usage = obj(response.get("usage"))
            if answer and usage:
                answer[0].tokens_in = as_int(usage.get("prompt_tokens"))
                answer[0].tokens_out = as_int(usage.get("completion_tokens"))
            n += len(answer)
            yield from answer
        if response:
            self.ledger.mapped()
            self.model = self.model or str_or_none(response.get("model"))
            meta["response"] = {k: v for k, v in response.items() if k != "choices"}

    def record(self, opts: ImportOptions, steps: list[Step] | None = None, raw: bytes | None = None) -> ImportedRecord:
        """The record, once :meth:`steps` is exhausted: finished with ``steps`` and ``raw`` when
        held whole, else (streamed) with the user's overrides only."""
        meta = self.meta
        traj = Trajectory(
            id=stable_id(self.name, meta.get("id") or self.path.name, orjson.dumps(self.first, default=str)),
            source_format=self.name,
            source_path=str(self.path),
            title=str(meta.get("title") or self.path.stem),
            model=self.model,
            task=self.task,
            metadata=meta,
            raw=raw,
            steps=steps or [],
        )
        return ImportedRecord(trajectory=overridden(traj, opts) if steps is None else finish(traj, opts),
                              ledger=self.ledger)
