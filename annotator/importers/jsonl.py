"""Generic JSON Lines: one trajectory per line, for runs exported by a script of one's own.

Each line is an object with ``messages`` (an OpenAI chat list) or ``steps`` / ``trajectory``
(a list of step objects or strings), plus optional ``id``, ``title``, ``system``, ``model``,
``benchmark``, ``task``, ``outcome`` / ``success`` and ``score``. The file is read line by
line, so its size does not matter; a bad line fails the file naming the line, unless
``--skip-bad-lines`` (the skipped numbers go to ``opts.extra["skipped_lines"]``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import (
    ImportedRecord,
    Importer,
    ImportOptions,
    as_text,
    finish,
    record_values,
    stable_id,
)
from annotator.importers.chat import chat_steps, looks_like_chat
from annotator.importers.detect import Head
from annotator.importers.reading import iter_jsonl
from annotator.importers.steps import json_text, str_or_none
from annotator.models import HIDDEN, STEP_KINDS, Step, Trajectory

STEP_LISTS = ("messages", "steps", "trajectory")
_TEXT_KEYS = ("content", "text", "message", "output", "observation")
_STEP_KEYS = {"index", "agent", "name", "speaker", "role", "recipient", "kind", "type", "tool_name", "tool",
              "tool_args", "arguments", "args", "call_id", "tool_call_id", "id", *_TEXT_KEYS}
_OUTCOMES = {"success": "success", "failure": "failure", "fail": "failure", "failed": "failure",
             "unknown": "unknown", "true": "success", "false": "failure"}


class Jsonl(Importer):
    name = "jsonl"
    description = "Generic JSON Lines, one trajectory per line (messages, or steps/trajectory, plus id/system/model/...)"
    fallback = True

    def sniff(self, head: Head) -> bool:
        first = next((line for line in head.lines if line is not None), None)
        return head.kind == "jsonl" and isinstance(first, dict) and any(k in first for k in STEP_LISTS)

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        skipped = opts.extra.setdefault("skipped_lines", [])
        for lineno, value in iter_jsonl(path, opts, skipped):
            where = f"line {lineno}"
            with record_values(path, where):
                item = self._record(path, lineno, value, opts)
            yield item

    def _record(self, path: Path, lineno: int, rec: object, opts: ImportOptions) -> ImportedRecord:
        where = f"line {lineno}"
        if not isinstance(rec, dict):
            raise ImportFailure(str(path), f"expected a JSON object, got {type(rec).__name__}", where=where)
        key = next((k for k in STEP_LISTS if isinstance(rec.get(k), list)), None)
        if key is None:
            raise ImportFailure(str(path), "line has no 'messages', 'steps' or 'trajectory' list", where=where)
        items = rec[key]
        if key == "messages" or (items and looks_like_chat(items[0])):
            steps = chat_steps(items, path, where=f"{where} {key}")
        else:
            steps = [_step(path, i, item, f"{where} {key}") for i, item in enumerate(items)]
        meta = {k: v for k, v in rec.items() if k not in STEP_LISTS}
        hidden = {k: meta.pop(k) for k in ("outcome", "success", "score", "reward") if k in meta}
        if hidden:
            meta[HIDDEN] = hidden
        ident = rec.get("id")
        traj = Trajectory(
            id=stable_id(self.name, path.name, lineno if ident is None else ident),
            source_format=self.name, source_path=str(path), source_ref=where,
            title=str_or_none(rec.get("title")) or (f"{path.stem}:{ident}" if ident is not None else f"{path.stem}:{lineno}"),
            system=str_or_none(rec.get("system")), model=str_or_none(rec.get("model")),
            benchmark=str_or_none(rec.get("benchmark")),
            task=as_text(rec["task"]) if rec.get("task") is not None else None,
            outcome=_outcome(hidden), score=_score(hidden), metadata=meta,
            raw=orjson.dumps(rec), steps=steps,
        )
        ledger = Ledger()
        ledger.mapped()  # the line is the trajectory
        return ImportedRecord(trajectory=finish(traj, opts), ledger=ledger)


def _step(path: Path, i: int, item: object, where: str) -> Step:
    """A step from a string or a loosely shaped step object; fields with no place go to attributes."""
    if isinstance(item, str):
        return Step(index=i, id=f"{where}[{i}]", content=item)
    if not isinstance(item, dict):
        raise ImportFailure(str(path), f"step is a {type(item).__name__}, not an object or text", where=f"{where}[{i}]")
    kind = item.get("kind", item.get("type"))
    text = next((item[k] for k in _TEXT_KEYS if k in item), None)
    args = item.get("tool_args", item.get("arguments", item.get("args")))
    return Step(
        index=i,
        id=str_or_none(item.get("id")) or f"{where}[{i}]",
        agent=str_or_none(item.get("agent", item.get("name", item.get("speaker")))),
        role=str_or_none(item.get("role")),
        recipient=str_or_none(item.get("recipient")),
        kind=kind if kind in STEP_KINDS else "message",
        content=as_text(text),
        tool_name=str_or_none(item.get("tool_name", item.get("tool"))),
        tool_args=json_text(args),
        call_id=str_or_none(item.get("call_id", item.get("tool_call_id"))),
        attributes={k: v for k, v in item.items() if k not in _STEP_KEYS},
        raw=item,
    )


def _outcome(hidden: dict) -> str:
    value = hidden.get("outcome", hidden.get("success"))
    if isinstance(value, bool):
        return "success" if value else "failure"
    if isinstance(value, str):
        return _OUTCOMES.get(value.strip().lower(), "unknown")
    return "unknown"


def _score(hidden: dict) -> float | None:
    value = hidden.get("score", hidden.get("reward"))
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
