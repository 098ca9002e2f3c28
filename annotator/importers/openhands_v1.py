"""OpenHands V1 (software-agent-sdk) event logs: a JSON array, or JSON Lines, of serialised
events, each tagged with its class name in ``kind``; and the SDK's persisted conversation
folder (``base_state.json`` + ``events/event-NNNNN-<uuid>.json``, one event per file), which is
one trajectory: the folder is the unit, and naming any file in it imports the whole
conversation. ``base_state.json`` gives the model (``agent.llm.model``) and the run's status.

Field names follow the SDK's event models (``openhands/sdk/event``): a ``MessageEvent``
carries ``llm_message``; an ``ActionEvent`` the model's ``thought``, ``reasoning_content``,
``tool_name``, ``tool_call_id`` and ``tool_call``; an ``ObservationEvent`` the tool's
``observation`` (``content`` parts, ``is_error``) and the ``action_id`` it answers; a
``UserRejectObservation`` or ``AgentErrorEvent`` answers a call without running it. The
``finish`` tool is the final answer. Kinds the SDK adds later become counted generic steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from annotator.errors import ImportFailure
from annotator.importers.base import (ImportedRecord, Importer, ImportOptions, as_text, finish, first_request,
                                      stable_id)
from annotator.importers.detect import Head
from annotator.importers.media import uri_text
from annotator.importers.reading import json_lines, load_json
from annotator.importers.steps import StepList, fingerprint, json_text, obj, parse_time, plain, seq, str_or_none
from annotator.models import Step, Trajectory

#: Kinds that record conversation bookkeeping, not the agent's work: no step.
_QUIET = {"ConversationStateUpdateEvent", "TokenEvent", "CondensationRequest"}
_KNOWN = {"SystemPromptEvent", "SystemPromptUpdateEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "UserRejectObservation",
          "AgentErrorEvent", "Condensation", "CondensationSummaryEvent", "PauseEvent", *_QUIET}


def _part_text(part: dict) -> str | None:
    if part.get("text") is not None:
        return as_text(part["text"])
    if part.get("type") == "image":  # ImageContent: a list of URLs (often base64 data URIs)
        return "\n".join(uri_text(u) for u in seq(part.get("image_urls")) if isinstance(u, str)) or None
    return None


def _texts(parts: object) -> str:
    """Text of a list of content parts (``TextContent``, ``ImageContent`` as placeholders), or of one part."""
    parts = parts if isinstance(parts, list) else [parts]
    return "\n".join(t for t in (_part_text(obj(p)) for p in parts) if t is not None)


class V1Events:
    """Steps of a list of V1 events (shared with OpenHands evaluation records whose history is V1)."""

    def __init__(self) -> None:
        self.out = StepList()
        self.calls: dict[str, Step] = {}  # action event id -> its tool call step
        self.finished: set[str] = set()  # ids of finish actions: their observation echoes the answer
        self.model: str | None = None  # from the conversation's stats updates

    def add(self, i: int, event: object, path: Path) -> None:
        if not isinstance(event, dict) or "kind" not in event:
            raise ImportFailure(str(path), "not an OpenHands event (needs 'kind')", where=f"event {i}")
        kind = str_or_none(event.get("kind")) or ""
        source = str_or_none(event.get("source"))
        base = dict(id=str_or_none(event.get("id")) or f"event {i}", timestamp=parse_time(event.get("timestamp")),
                    raw=plain(event), role=source, agent=str_or_none(event.get("sender")) or source)
        handler = getattr(self, "_" + kind, None) if kind in _KNOWN else None
        if kind in _QUIET:
            if kind == "ConversationStateUpdateEvent" and event.get("key") == "stats":
                usage = next(iter(obj(obj(event.get("value")).get("usage_to_metrics")).values()), None)
                self.model = self.model or str_or_none(obj(usage).get("model_name"))
            self.out.ledger.dropped("state update")
            return
        if kind == "ObservationEvent" and str_or_none(event.get("action_id")) in self.finished:
            self.out.ledger.folded("finish observation")  # it repeats the final answer
            return
        self.out.ledger.mapped()
        if handler is None:
            self.out.unknown_event(kind, base["raw"], **{k: v for k, v in base.items() if k != "raw"})
            return
        handler(event, base)

    def _SystemPromptEvent(self, e: dict, base: dict) -> None:
        text = "\n\n".join(t for t in (_texts(e.get("system_prompt")), _texts(e.get("dynamic_context"))) if t)
        self.out.add(kind="system", content=text, **base)

    def _SystemPromptUpdateEvent(self, e: dict, base: dict) -> None:
        tools = ", ".join(str(obj(t).get("title") or obj(t).get("name")) for t in seq(e.get("tools")))
        head = f"[system prompt updated{': ' + as_text(e.get('reason')) if e.get('reason') else ''}]"
        self.out.add(kind="system", content="\n".join(t for t in (head, f"tools: {tools}" if tools else "",
                                                                  _texts(e.get("system_prompt"))) if t), **base)

    def _MessageEvent(self, e: dict, base: dict) -> None:
        msg = obj(e.get("llm_message"))
        reasoning = as_text(msg.get("reasoning_content"))
        if reasoning:
            self.out.add(kind="thought", content=reasoning, **{**base, "id": f"{base['id']}.reasoning"})
        self.out.add(kind="message", content=_texts(msg.get("content")) or as_text(msg.get("content")), **base)

    def _ActionEvent(self, e: dict, base: dict) -> None:
        thought = "\n".join(t for t in (as_text(e.get("reasoning_content")), _texts(e.get("thought"))) if t)
        if thought:
            self.out.add(kind="thought", content=thought, **{**base, "id": f"{base['id']}.thought"})
        call = obj(e.get("tool_call"))
        name = str_or_none(e.get("tool_name")) or str_or_none(call.get("name"))
        action = {k: v for k, v in obj(e.get("action")).items() if k != "kind"}
        args = json_text(call.get("arguments")) or json_text(action) or ""
        if name == "finish":
            self.finished.add(base["id"])
            self.out.add(kind="final_answer", content=as_text(action.get("message")) or args, tool_name=name, **base)
            return
        step = self.out.add(kind="tool_call", content=as_text(e.get("summary")) or f"{name}({args})", tool_name=name,
                            tool_args=args, call_id=str_or_none(e.get("tool_call_id")), **base)
        self.calls[base["id"]] = step

    def _answer(self, e: dict, base: dict, kind: str, content: str) -> Step:
        call = self.calls.get(str_or_none(e.get("action_id")) or "")
        step = self.out.add(kind=kind, content=content, tool_name=str_or_none(e.get("tool_name")),
                            call_id=str_or_none(e.get("tool_call_id")), **{**base, "agent": "environment"})
        if call is not None:
            step.link, call.link = call.index, step.index
        return step

    def _ObservationEvent(self, e: dict, base: dict) -> None:
        observation = obj(e.get("observation"))
        step = self._answer(e, base, "tool_result", _texts(observation.get("content")))
        if observation.get("is_error"):
            step.attributes["is_error"] = True

    def _UserRejectObservation(self, e: dict, base: dict) -> None:
        step = self._answer(e, base, "tool_result", f"rejected: {as_text(e.get('rejection_reason'))}")
        step.attributes["rejected_by"] = e.get("rejection_source") or "user"

    def _AgentErrorEvent(self, e: dict, base: dict) -> None:
        self._answer(e, base, "error", as_text(e.get("error")))

    def _Condensation(self, e: dict, base: dict) -> None:
        forgotten = len(seq(e.get("forgotten_event_ids")))
        text = f"[context condensed: {forgotten} event(s) forgotten] {as_text(e.get('summary'))}".strip()
        self.out.add(kind="system", content=text, **base)

    def _CondensationSummaryEvent(self, e: dict, base: dict) -> None:
        self.out.add(kind="system", content=as_text(e.get("summary")), **base)

    def _PauseEvent(self, e: dict, base: dict) -> None:
        self.out.add(kind="event", content="[paused]", **base)


BASE_STATE = "base_state.json"


def conversation_dir(path: Path) -> Path | None:
    """The persisted conversation folder ``path`` is, or holds ``path`` (its ``base_state.json``
    or one of its event files); None otherwise."""
    if path.is_dir():
        folder = path
    elif path.name == BASE_STATE:
        folder = path.parent
    elif path.parent.name == "events" and path.name.startswith("event-"):
        folder = path.parent.parent
    else:
        return None
    return folder if (folder / BASE_STATE).is_file() and (folder / "events").is_dir() else None


def event_files(folder: Path) -> list[Path]:
    """A conversation's event files in order (their names carry the zero-padded sequence number)."""
    return sorted(f for f in (folder / "events").glob("event-*.json") if f.is_file())


def events_of(events: list, path: Path, b: V1Events) -> None:
    for i, event in enumerate(events):
        b.add(i, event, path)


def is_v1_event(item: object) -> bool:
    kind = item.get("kind") if isinstance(item, dict) else None
    return isinstance(kind, str) and "source" in item and (kind.endswith("Event") or kind in _KNOWN)


class OpenHandsV1(Importer):
    name = "openhands_v1"
    description = "OpenHands V1 (software-agent-sdk) event log: JSON array or JSON Lines of events with 'kind'"

    def sniff(self, head: Head) -> bool:
        if head.kind == "jsonl":
            return bool(head.lines) and is_v1_event(head.lines[0])
        if head.kind != "json":
            return False
        if head.root == "object":  # one event file, or the state file, of a conversation folder
            return conversation_dir(head.path) is not None and (
                is_v1_event({"kind": head.scalars.get("kind"), "source": None}) or head.path.name == BASE_STATE)
        kind = head.scalars.get("item.kind")
        return head.root == "array" and "source" in head.keys("item") and is_v1_event({"kind": kind, "source": None})

    def claims_dir(self, path: Path) -> bool:
        return conversation_dir(path) == path

    def skip_reason(self, path: Path, walked: bool) -> str | None:
        folder = conversation_dir(path) if path.is_file() else None
        if walked and folder is not None and event_files(folder)[:1] != [path]:
            return f"part of the OpenHands conversation {folder}, imported with its first event file"
        return None

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        folder = conversation_dir(path)
        if folder is not None:
            yield self._conversation(folder, opts)
            return
        raw = path.read_bytes()
        lines = json_lines(path, opts, raw)
        if lines is not None:
            events = [rec for _, rec in lines]
        else:
            events = load_json(path, raw)
            if not isinstance(events, list):
                raise ImportFailure(str(path), "expected a list of OpenHands events")
        b = V1Events()
        events_of(events, path, b)
        traj = Trajectory(
            id=stable_id(self.name, fingerprint(raw)),
            source_format=self.name,
            source_path=str(path),
            title=path.stem,
            system="OpenHands",
            model=b.model,
            task=first_request(b.out.steps),
            metadata={"events": len(events)},
            raw=raw,
            steps=b.out.require(path, "events"),
        )
        yield ImportedRecord(trajectory=finish(traj, opts), ledger=b.out.ledger)

    def _conversation(self, folder: Path, opts: ImportOptions) -> ImportedRecord:
        """The trajectory of a persisted conversation folder."""
        state_raw = (folder / BASE_STATE).read_bytes()
        state = load_json(folder / BASE_STATE, state_raw)
        if not isinstance(state, dict):
            raise ImportFailure(str(folder / BASE_STATE), "expected the conversation state object")
        b = V1Events()
        b.out.ledger.mapped()  # base_state.json: the model, status and stats
        files = event_files(folder)
        for i, f in enumerate(files):
            b.add(i, load_json(f), f)
        llm = obj(obj(state.get("agent")).get("llm"))
        conversation = str_or_none(state.get("id")) or folder.name
        status = str_or_none(state.get("execution_status"))
        traj = Trajectory(
            id=stable_id(self.name, "conversation", conversation),
            source_format=self.name,
            source_path=str(folder),
            source_ref=f"conversation {conversation} ({len(files)} event files)",
            title=f"OpenHands conversation {conversation}",
            system="OpenHands",
            model=str_or_none(llm.get("model")) or b.model,
            task=first_request(b.out.steps),
            outcome="failure" if status == "error" else "unknown",
            metadata={"conversation_id": conversation, "execution_status": status, "events": len(files),
                      "agent": str_or_none(obj(state.get("agent")).get("kind")),
                      "stats": obj(state.get("stats"))},
            raw=state_raw,
            steps=b.out.require(folder, "events"),
        )
        return ImportedRecord(trajectory=finish(traj, opts), ledger=b.out.ledger)
