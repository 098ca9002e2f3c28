"""Who&When (arXiv 2505.00212): failed multi-agent runs with a human "who and when" attribution.

One message per step (``history[i]`` is step i). The decisive error (``mistake_agent``,
``mistake_step`` — a 0-based string — and ``mistake_reason``) becomes an Attribution by
annotator ``who-and-when``; the correctness key gives the outcome. Algorithm-Generated files
(CaptainAgent/AG2) name speakers in ``name``; Hand-Crafted files (Magentic-One) in ``role``,
with the addressee in a ``(-> X)`` suffix.

In AG2 group chats the code executor (``Computer_terminal``, Magentic-One's ``ComputerTerminal``)
runs the fenced code blocks of the message before it and answers with their exit code and
output: that message is the call (``code_execution``, its blocks as the arguments) and the
answer its linked result, the message staying the step of its own ``history`` index. The
executor's "There is no code from the last 1 message for me to execute" ran nothing: it is a
message, not a result.
"""

from __future__ import annotations

import re
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
from annotator.importers.detect import Head
from annotator.importers.reading import load_json, require
from annotator.importers.steps import plain
from annotator.importers.log_splitters import parse_speaker
from annotator.models import HIDDEN, Attribution, Step, Trajectory

ANNOTATOR = "who-and-when"
#: A fenced code block as AG2 finds the code to run (``autogen.code_utils.CODE_BLOCK_PATTERN``).
_CODE_BLOCK = re.compile(r"```[ \t]*(\w+)?[ \t]*\r?\n(.*?)\r?\n[ \t]*```", re.S)
_NOTHING_RUN = "There is no code from the last"
EXECUTE = "code_execution"


class WhoAndWhen(Importer):
    name = "who_and_when"
    description = "Who&When failure-attribution records (history + mistake_agent/mistake_step)"

    def sniff(self, head: Head) -> bool:
        return head.kind == "json" and {"history", "mistake_agent", "mistake_step"} <= head.keys("")

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        raw = path.read_bytes()
        with record_values(path):
            rec = require(path, load_json(path, raw), ("history", "mistake_agent", "mistake_step"))
            history = rec["history"]
            if not isinstance(history, list):
                raise ImportFailure(str(path), "'history' must be a list of messages")
            hand_crafted = any("name" not in m for m in history if isinstance(m, dict))
            steps = [_step(path, i, m) for i, m in enumerate(history)]
            _link_executions(steps)
            correct = rec.get("is_correct", rec.get("is_corrected"))
            question_id = rec.get("question_ID")
            traj_id = stable_id("who_and_when", question_id or path.name, len(history))
            meta: dict = {k: rec[k] for k in ("question_ID", "level", "system_prompt") if k in rec}
            meta[HIDDEN] = {k: rec[k] for k in ("is_correct", "is_corrected", "ground_truth", "mistake_type") if k in rec}
            traj = Trajectory(
                id=traj_id,
                source_format=self.name,
                source_path=str(path),
                title=f"{path.stem}",
                system="Magentic-One" if hand_crafted else "CaptainAgent",
                benchmark="GAIA" if hand_crafted else "AssistantBench/GAIA",
                task=as_text(rec.get("question")) or None,
                outcome="unknown" if correct is None else ("success" if correct else "failure"),
                metadata=meta,
                raw=raw,
                steps=steps,
            )
            traj = finish(traj, opts)
            attribution = _attribution(traj, rec)
            ledger = Ledger()
            ledger.mapped(len(history))  # each message is a step
            for warning in attribution.warnings:
                ledger.warn("label", warning)
            item = ImportedRecord(trajectory=traj, attributions=[attribution], ledger=ledger)
        yield item


def _step(path: Path, i: int, msg: object) -> Step:
    if not isinstance(msg, dict) or "content" not in msg:
        raise ImportFailure(str(path), "history item is not a message with 'content'", where=f"history[{i}]")
    role = msg.get("role")
    name = msg.get("name")
    agent = None if name is None and role is None else str(name if name is not None else role)
    recipient = None
    kind = "message"
    if name is None and role is not None:
        agent, recipient, kind = parse_speaker(str(role))
    content = as_text(msg.get("content"))
    if _is_executor(agent):
        kind = "message" if content.lstrip().startswith(_NOTHING_RUN) else "tool_result"
    return Step(
        index=i,
        id=f"history[{i}]",
        agent=agent,
        role=str(role) if role is not None else None,
        recipient=recipient,
        kind=kind,
        content=content,
        raw=plain(msg),
    )


def _is_executor(agent: str | None) -> bool:
    return str(agent).replace("_", "").lower() == "computerterminal"


def _link_executions(steps: list[Step]) -> None:
    """Make the message whose code blocks an executor's output answers the call of that output."""
    for result, asker in zip(steps[1:], steps):
        if result.kind != "tool_result" or _is_executor(asker.agent):
            continue
        blocks = _CODE_BLOCK.findall(asker.content)
        if blocks:
            asker.kind, asker.tool_name, asker.call_id = "tool_call", EXECUTE, asker.id
            asker.tool_args = orjson.dumps([{"language": lang or None, "code": code} for lang, code in blocks]).decode()
            result.call_id = asker.id


def _attribution(traj: Trajectory, rec: dict) -> Attribution:
    given = rec.get("mistake_step")
    agent = rec.get("mistake_agent")
    warnings: list[str] = []
    step: int | None = None
    try:
        step = int(str(given).strip())
    except ValueError:
        warnings.append(f"mistake_step {given!r} is not a step number")
    if step is not None and not 0 <= step < len(traj.steps):
        warnings.append(f"mistake_step {step} is outside the {len(traj.steps)} steps")
        step = None
    if step is not None and agent:
        speaker = traj.steps[step].agent or ""
        if speaker != agent:
            if speaker.lower() == str(agent).lower():
                how = "differs only in case from"
            elif str(agent).lower() in (traj.steps[step].role or speaker).lower():
                how = "is part of"
            else:
                how = "is not"
            warnings.append(f"mistake_agent {agent!r} {how} the speaker of step {step} ({speaker!r})")
    return Attribution(
        trajectory_id=traj.id,
        annotator=ANNOTATOR,
        step=step,
        step_as_given=None if given is None else str(given),
        agent=agent,
        reason=rec.get("mistake_reason"),
        warnings=warnings,
    )
