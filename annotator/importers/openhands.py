"""OpenHands event streams: a JSON list of (V0) events, or evaluation and resolver records that
hold one under ``history`` (a JSON object, or ``output.jsonl`` with one record per line).

Records come from three harnesses: the V0 evaluation (``instance_id``, V0 events), the current
one (OpenHands/benchmarks ``EvalOutput``: ``instance_id``, ``metadata.llm.model`` and a history
of V1 software-agent-sdk events, told apart per record by their ``kind`` and read by the V1
reader), and the issue resolver (``issue``, ``instruction``, ``success``,
``result_explanation``; its early events are flat: an action's arguments beside ``action``,
no ``source``, an observation following its action with no ``cause``).

An event is an action (``action``: message, run, edit, read, browse, finish ...) or an
observation (``observation``) answering the action whose ``id`` is its ``cause``. An action
with ``args.thought`` gives a thought step, then its tool call (named after the function the
model called); an observation gives the tool result, linked through ``cause``. ``finish`` is
the final answer. The same ``model_response`` is repeated on an action and its observation,
so its token usage is counted once per response id. Event ids are not contiguous and are
never used as step indexes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.base import (ImportedRecord, Importer, ImportOptions, as_text, finish, first_request,
                                      stable_id)
from annotator.importers.detect import Head
from annotator.importers.openhands_v1 import V1Events, events_of, is_v1_event
from annotator.importers.reading import json_lines, load_json
from annotator.importers.steps import StepList, as_int, compact, fingerprint
from annotator.importers.steps import json_text, obj, parse_time, plain, str_or_none
from annotator.models import HIDDEN, Step, Trajectory

#: Actions and observations that are state changes, not the agent's work: kept as events.
_STATE = {"change_agent_state", "agent_state_changed", "recall", "condensation", "null", "system_message"}
_EVENT_KEYS = {"id", "timestamp", "source"}
_RECORD_KEYS = {"instance_id", "history"}
_RESOLVER_KEYS = {"issue", "instruction", "history"}
#: Keys of a flat (resolver) event that are bookkeeping, not the arguments of the agent's call.
_FLAT_META = {"id", "timestamp", "source", "message", "cause", "action", "observation", "tool_call_metadata",
              "llm_metrics", "timeout", "action_risk", "security_risk", "is_confirmed", "confirmation_state",
              "keep_prompt", "images_urls", "wait_for_response", "kernel_init_code", "blocking", "hidden"}


class _Events:
    def __init__(self) -> None:
        self.out = StepList()
        self.calls: dict[object, Step] = {}  # action event id -> its tool_call step
        self.responses: set[str] = set()
        self.model: str | None = None
        self.pending: Step | None = None  # the last call not yet answered, for events without ``cause``

    def _usage(self, event: dict, step: Step) -> None:
        resp = obj(obj(event.get("tool_call_metadata")).get("model_response"))
        rid = str_or_none(resp.get("id"))
        if not rid or rid in self.responses:
            return
        self.responses.add(rid)
        usage = obj(resp.get("usage"))
        step.tokens_in, step.tokens_out = as_int(usage.get("prompt_tokens")), as_int(usage.get("completion_tokens"))
        self.model = self.model or str_or_none(resp.get("model"))

    def add(self, i: int, event: object, path: Path) -> None:
        if not isinstance(event, dict) or not ("action" in event or "observation" in event):
            raise ImportFailure(str(path), "not an OpenHands event (needs 'action' or 'observation')",
                                where=f"event {i}")
        self.out.ledger.mapped()  # every event is a step
        sid = f"event {event.get('id', i)}"
        source = str_or_none(event.get("source")) or self._source(event)
        base = dict(timestamp=parse_time(event.get("timestamp")), raw=plain(event))
        meta = obj(event.get("tool_call_metadata"))
        args = obj(event["args"]) if "args" in event else {k: v for k, v in event.items() if k not in _FLAT_META}
        if "action" in event:
            self._action(event, sid, source, base, meta, args)
        else:
            self._observation(event, sid, source, base, meta)

    def _source(self, event: dict) -> str:
        """Who wrote a flat event that does not say: the opening message is the user's, every
        other action the agent's, an observation the environment's."""
        if "observation" in event:
            return "environment"
        return "user" if event.get("action") == "message" and not self.out.steps else "agent"

    def _action(self, event: dict, sid: str, source, base: dict, meta: dict, args: dict) -> None:
        action = str_or_none(event.get("action"))
        thought = as_text(args.get("thought"))
        if action == "message":
            text = as_text(args.get("content")) or as_text(event.get("message"))
            self._usage(event, self.out.add(id=sid, kind="message", role=source, agent=source, content=text, **base))
            return
        if action == "finish":
            text = as_text(args.get("final_thought") or thought or event.get("message"))
            if args.get("outputs"):
                text = f"{text}\n{compact(args['outputs'])}".strip()
            self._usage(event, self.out.add(id=sid, kind="final_answer", role=source, agent=source, content=text, **base))
            return
        if action in ("think", "system"):
            kind = "thought" if action == "think" else "system"
            self.out.add(id=sid, kind=kind, role=source, agent=source,
                         content=thought or as_text(args.get("content")) or as_text(event.get("message")), **base)
            return
        if action in _STATE:
            self.out.add(id=sid, kind="event", role=source, agent=source, content=f"[{action}] {compact(args)}", **base)
            return
        first = None
        if thought:
            first = self.out.add(id=f"{sid}.thought", kind="thought", role=source, agent=source, content=thought, **base)
        name = meta.get("function_name") or action
        call_args = {k: v for k, v in args.items() if k != "thought"}
        step = self.out.add(id=sid, kind="tool_call", role=source, agent=source,
                            content=as_text(event.get("message")) or f"{name}({json_text(call_args)})",
                            tool_name=name, tool_args=json_text(call_args),
                            call_id=meta.get("tool_call_id") or sid, recipient=args.get("agent"), **base)
        step.attributes["action"] = action
        self.calls[str_or_none(event.get("id"))] = step
        self.pending = step
        self._usage(event, first or step)

    def _observation(self, event: dict, sid: str, source, base: dict, meta: dict) -> None:
        obs = str_or_none(event.get("observation"))
        text = as_text(event.get("content")) or as_text(event.get("message"))
        if obs in _STATE:
            extras = obj(event.get("extras"))
            self.out.add(id=sid, kind="event", role=source, agent=source,
                         content=f"[{obs}] {compact(extras) if extras else text}", **base)
            return
        call = self.calls.get(str_or_none(event.get("cause"))) if "cause" in event else self.pending
        self.pending = None
        exit_code = obj(obj(event.get("extras")).get("metadata")).get("exit_code", event.get("exit_code"))
        step = self.out.add(id=sid, kind="error" if obs == "error" else "tool_result", role="tool",
                            agent="environment", content=text,
                            tool_name=call.tool_name if call else meta.get("function_name"),
                            call_id=call.call_id if call else meta.get("tool_call_id"), **base)
        step.attributes.update({"observation": obs, **({"exit_code": exit_code} if exit_code is not None else {}),
                                **({"success": event["success"]} if "success" in event else {})})
        if call is not None:
            step.link, call.link = call.index, step.index


def _steps(path: Path, events: list) -> tuple[StepList, str | None]:
    """The steps of a history and the model its events name; V1 (software-agent-sdk) events,
    known by their ``kind``, are read by the V1 reader."""
    if any(is_v1_event(e) for e in events[:5]):
        v1 = V1Events()
        events_of(events, path, v1)
        return v1.out, v1.model
    b = _Events()
    for i, event in enumerate(events):
        b.add(i, event, path)
    return b.out, b.model


def _title(record: dict, path: Path) -> str:
    issue = obj(record.get("issue"))
    if issue.get("repo") is not None and issue.get("number") is not None:
        return f"{issue.get('owner')}/{issue.get('repo')}#{issue.get('number')}: {as_text(issue.get('title'))}"
    return str_or_none(record.get("instance_id")) or path.stem


def _outcome(record: dict) -> str:
    """A resolver record says whether the issue was resolved; an eval record only whether it failed."""
    if record.get("error"):
        return "failure"
    if isinstance(record.get("success"), bool):
        return "success" if record["success"] else "failure"
    return "unknown"


def _trajectory(path: Path, fmt: str, events: list, record: dict, where: str, opts: ImportOptions) -> ImportedRecord:
    out, model = _steps(path, events)
    instance = record.get("instance_id")
    hidden = {k: record[k] for k in ("test_result", "report", "resolved", "error", "success", "comment_success",
                                     "result_explanation", "git_patch") if record.get(k) is not None}
    meta = {k: record[k] for k in ("instance_id", "attempt", "metrics", "metadata", "issue", "issue_type",
                                   "base_commit") if record.get(k) is not None}
    instruction = str_or_none(record.get("instruction"))
    raw = orjson.dumps(record or events, default=str)
    traj = Trajectory(
        id=stable_id(fmt, instance, fingerprint(raw)),
        source_format=fmt,
        source_path=str(path),
        source_ref=where,
        title=_title(record, path),
        system="OpenHands resolver" if "issue" in record else "OpenHands",
        model=str_or_none(obj(obj(record.get("metadata")).get("llm")).get("model")) or model,
        task=instruction or first_request(out.steps),
        outcome=_outcome(record),
        metadata={**meta, HIDDEN: hidden} if hidden else meta,
        raw=raw,
        steps=out.require(path, "events"),
    )
    return ImportedRecord(trajectory=finish(traj, opts), ledger=out.ledger)


def _is_record(first: object) -> bool:
    """An evaluation or resolver record: a history list beside an instance id or an issue."""
    return (isinstance(first, dict) and isinstance(first.get("history"), list)
            and (_RECORD_KEYS <= set(first) or _RESOLVER_KEYS <= set(first)))


class OpenHands(Importer):
    name = "openhands"
    description = "OpenHands V0 event stream (list of action/observation events) or eval records with 'history'"

    def sniff(self, head: Head) -> bool:
        if head.kind == "jsonl":
            return _is_record(head.lines[0] if head.lines else None)
        if head.kind != "json":
            return False
        if head.root == "array":
            keys = head.keys("item")
            return _EVENT_KEYS <= keys and bool(keys & {"action", "observation"}) and "kind" not in keys
        keys = head.keys("")
        return (_RECORD_KEYS <= keys or _RESOLVER_KEYS <= keys) and bool(
            head.keys("history.item") & {"action", "observation", "kind"})

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        lines = json_lines(path, opts)
        if lines is not None:
            for lineno, rec in lines:
                if not isinstance(rec, dict) or not isinstance(rec.get("history"), list):
                    raise ImportFailure(str(path), "not an OpenHands eval record (needs 'history')",
                                        where=f"line {lineno}")
                yield _trajectory(path, self.name, rec["history"], rec, f"line {lineno}", opts)
            return
        data = load_json(path)
        if isinstance(data, list):
            yield _trajectory(path, self.name, data, {}, "events", opts)
        elif isinstance(data, dict) and isinstance(data.get("history"), list):
            yield _trajectory(path, self.name, data["history"], data, "record", opts)
        else:
            raise ImportFailure(str(path), "expected a list of OpenHands events or a record with 'history'")
