"""tau-bench runs: the result file ``run.py`` writes, and the conversations of its few-shot data.

A result file (``<strategy>-<model>-<temperature>_range_<start>-<end>_user-<user model>-
<user strategy>_<time>.json``) is a JSON array with one record per task and trial:
``{task_id, reward, info, traj, trial}``. ``traj`` is the conversation in OpenAI chat form (the
policy as system message, the simulated user's turns, the agent's replies and tool calls, the
tools' results); ``info.task`` holds the user's ``instruction`` (the task) and the expected
``actions`` and ``outputs``; ``info.reward_info`` how the run was graded. Each record is a
trajectory. Its task is the instruction; the reward is the score, and the run succeeded when it
is 1 (tau-bench's pass); reward, grading and the expected actions are hidden metadata, so an
annotator judges the conversation without the answer key. A record whose run crashed before
the conversation began (``traj`` empty, ``info.error``) is a trajectory of that one error.
The file records no model: the file name does (with the agent strategy), as does the name of
the published ``historical_trajectories/<model>-<domain>.json``.

The few-shot data (``few_shot_data/*.jsonl``) keeps each conversation as one text,
``messages_display``: ``user: …``, ``assistant: …``, ``tool: …`` turns, an assistant turn
``None`` standing for a tool call whose name and arguments the text does not record (a ``tool``
turn right after assistant text: that turn also called a tool). Each line is a trajectory; such
a call is a tool call without a name, linked to the result after it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, record_values, stable_id
from annotator.importers.chat import chat_steps
from annotator.importers.detect import Head, read_head
from annotator.importers.reading import iter_jsonl, iter_records
from annotator.importers.steps import StepList, obj, str_or_none
from annotator.models import HIDDEN, Step, Trajectory

SYSTEM = "tau-bench"
#: ``run.py``'s checkpoint name: strategy, model, temperature, task range, user model and strategy, time.
_RESULT_NAME = re.compile(
    r"^(?P<strategy>tool-calling|act|react|few-shot)-(?P<model>.+)-(?P<temperature>\d+(?:\.\d+)?)_range_(?P<start>-?\d+)-(?P<end>-?\d+)"
    r"_user-(?P<user_model>.+)-(?P<user_strategy>[a-z_]+)_(?P<time>\d+)$"
)
#: The published ``historical_trajectories/<model>-<domain>.json``.
_HISTORICAL_NAME = re.compile(r"^(?P<model>.+)-(?P<domain>airline|retail|telecom)$")
_UNRECORDED_CALL = "[tool call: name and arguments not recorded]"
_DISPLAY_TURN = re.compile(r"^(?P<role>user|assistant|tool|system): ?", re.M)


def reward_outcome(reward: object) -> tuple[str, float | None]:
    """Outcome and score of a tau-bench reward: 1 is a pass, anything less a failure."""
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        return "unknown", None
    return ("success" if reward >= 1 - 1e-9 else "failure"), float(reward)


def display_steps(text: str) -> list[Step]:
    """Steps of a ``messages_display`` text; an assistant turn ``None`` is an unnamed tool call."""
    out = StepList()
    turns = list(_DISPLAY_TURN.finditer(text))
    pending: Step | None = None
    for n, m in enumerate(turns):
        end = turns[n + 1].start() if n + 1 < len(turns) else len(text)
        role, body, sid = m["role"], text[m.end():end].rstrip("\n"), f"turn[{n}]"
        if role == "assistant" and body.strip() == "None":
            pending = out.add(id=sid, kind="tool_call", role=role, agent="assistant", call_id=sid,
                              content=_UNRECORDED_CALL)
        elif role == "tool":
            if pending is None and out.steps and out.steps[-1].role == "assistant":
                # the assistant spoke and called a tool in one turn: the text shows only what it said
                pending = out.add(id=f"{sid}.call", kind="tool_call", role="assistant", agent="assistant",
                                  call_id=f"{sid}.call", content=_UNRECORDED_CALL)
            out.add(id=sid, kind="tool_result", role=role, agent="environment", content=body,
                    call_id=pending.call_id if pending else None)
            pending = None
        else:
            out.add(id=sid, kind="system" if role == "system" else "message", role=role, agent=role, content=body)
    return out.steps


class TauBench(Importer):
    name = "tau_bench"
    description = "tau-bench result file ([{task_id, reward, info, traj, trial}]) or few-shot messages_display JSONL"

    def sniff(self, head: Head) -> bool:
        if head.kind == "jsonl":
            first = head.lines[0] if head.lines else None
            return isinstance(first, dict) and set(first) == {"messages_display"}
        return head.kind == "json" and head.root == "array" and {"task_id", "reward", "traj"} <= head.keys("item")

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        if read_head(path, opts).kind == "jsonl":
            yield from self._display(path, opts)
            return
        name = _RESULT_NAME.match(path.stem) or _HISTORICAL_NAME.match(path.stem)
        n = 0
        for n, rec in iter_records(path):
            if not isinstance(rec, dict) or "traj" not in rec:
                raise ImportFailure(str(path), "not a tau-bench result (needs 'traj')", where=f"record {n}")
            with record_values(path, f"record {n}"):
                item = self._result(path, n, rec, name, opts)
            yield item
        if n == 0:
            raise ImportFailure(str(path), "no tau-bench result records")

    def _result(self, path: Path, n: int, rec: dict, name: re.Match[str] | None,
                opts: ImportOptions) -> ImportedRecord:
        where = f"record {n}"
        messages = rec.get("traj")
        if not isinstance(messages, list):
            raise ImportFailure(str(path), "'traj' must be a list of messages", where=where)
        info = obj(rec.get("info"))
        task = obj(info.get("task"))
        steps = chat_steps(messages, path, where=f"record {n} traj")
        ledger = Ledger()
        ledger.mapped(len(messages))
        if not messages and info.get("error"):
            steps = [Step(index=0, id=f"{where} info.error", kind="error", role="system", agent=SYSTEM,
                          content="\n".join(as_text(info.get(k)) for k in ("error", "traceback") if info.get(k)))]
        outcome, score = reward_outcome(rec.get("reward"))
        hidden = {"reward": rec.get("reward"), "reward_info": info.get("reward_info"),
                  "expected_actions": task.get("actions"), "expected_outputs": task.get("outputs")}
        meta = {"task_id": rec.get("task_id"), "trial": rec.get("trial"), "user_id": task.get("user_id"),
                **{k: info[k] for k in ("source", "user_cost", "error") if k in info}, HIDDEN: hidden}
        if name:
            meta["run"] = name.groupdict()
        trial = rec.get("trial")
        traj = Trajectory(
            id=stable_id(self.name, path.name, n, rec.get("task_id"), trial),
            source_format=self.name,
            source_path=str(path),
            source_ref=where,
            title=f"tau-bench task {rec.get('task_id')}" + (f" trial {trial}" if trial is not None else ""),
            system=f"{SYSTEM} {name['strategy']} agent" if name and "strategy" in name.re.groupindex else SYSTEM,
            model=name["model"] if name else None,
            benchmark=SYSTEM,
            task=str_or_none(task.get("instruction")) or next((s.content for s in steps if s.role == "user"), None),
            outcome=outcome,
            score=score,
            metadata=meta,
            raw=orjson.dumps(rec),
            steps=steps,
        )
        return ImportedRecord(trajectory=finish(traj, opts), ledger=ledger)

    def _display(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        skipped = opts.extra.setdefault("skipped_lines", [])
        lineno = 0
        for lineno, line in iter_jsonl(path, opts, skipped):
            text = obj(line).get("messages_display")
            if not isinstance(text, str):
                raise ImportFailure(str(path), "expected a 'messages_display' text", where=f"line {lineno}")
            steps = display_steps(text)
            if not steps:
                raise ImportFailure(str(path), "no 'user:'/'assistant:'/'tool:' turns", where=f"line {lineno}")
            traj = Trajectory(
                id=stable_id(self.name, path.name, lineno, text[:200]),
                source_format=self.name,
                source_path=str(path),
                source_ref=f"line {lineno}",
                title=f"{path.stem} line {lineno}",
                system=SYSTEM,
                benchmark=SYSTEM,
                task=next((s.content for s in steps if s.role == "user"), None),
                metadata={"line": lineno},
                raw=text.encode(),
                steps=steps,
            )
            ledger = Ledger()
            ledger.mapped()
            yield ImportedRecord(trajectory=finish(traj, opts), ledger=ledger)
        if lineno == 0:
            raise ImportFailure(str(path), "no messages_display lines")
