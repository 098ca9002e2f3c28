"""Inspect AI evaluation logs: the ``.eval`` zip (``header.json`` + ``samples/*.json``) and
the ``.json`` log. One trajectory per sample and epoch.

Steps come from the sample's events where it has them (they carry time, usage, tool errors
and the span tree): a ``model`` event gives the new input messages (by message id) and the
assistant's output, a ``tool`` event the result of a call. Logs without events fall back to
the sample's messages. Scores are the outcome: they go to ``Trajectory.outcome``/``score``
and the hidden metadata, never into a step, so an annotator cannot see the grade.
``attachment://<hash>`` references are resolved from the sample's attachments.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import orjson

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, as_text, finish, stable_id
from annotator.importers.detect import Head
from annotator.importers.media import media_text, scrub_data_uris
from annotator.importers.reading import load_json
from annotator.importers.steps import StepList, as_int, compact, json_text, obj, parse_time, plain, seq, str_or_none
from annotator.models import HIDDEN, Trajectory

_ATTACHMENT = "attachment://"
#: Events that carry no step of their own: bookkeeping, sandbox internals of a tool, the grade.
_SILENT = {"span_begin", "span_end", "sandbox", "store", "state", "sample_init", "step", "score"}
_EVENT_STEPS = {"input", "approval", "subtask", "compaction"}
_GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def _resolve(value: object, attachments: dict) -> object:
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            return attachments.get(value[len(_ATTACHMENT):], value) if isinstance(attachments, dict) else value
        return value
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


def _content(content: object) -> tuple[str, str]:
    """(text, reasoning) of a message content: a string or a list of typed parts (images and
    other media as a placeholder)."""
    if isinstance(content, str) or content is None:
        return scrub_data_uris(content or ""), ""
    text, reasoning = [], []
    for part in content if isinstance(content, list) else [content]:
        if isinstance(part, dict) and part.get("type") == "reasoning":
            if not part.get("redacted"):
                reasoning.append(str(part.get("reasoning") or ""))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            text.append(part["text"])
        elif (media := media_text(part)) is not None:
            text.append(media)
        else:
            text.append(as_text(part))
    return "\n".join(text), "\n".join(reasoning)


class _SampleSteps:
    """Steps of one sample, from its events (or messages), with the agent from agent spans."""

    def __init__(self, message_pool: list) -> None:
        self.out = StepList()
        self.pool = message_pool
        self.seen: set[str] = set()
        self.calls: set[str] = set()
        self.spans: dict[str, dict] = {}

    def _where(self, event: dict) -> dict | None:
        """The agent and group of an event from its enclosing spans; None inside a scorer."""
        agent = group = None
        sid, guard = str_or_none(event.get("span_id")), set()
        while sid in self.spans and sid not in guard:
            guard.add(sid)
            span = self.spans[sid]
            if span.get("type") == "scorer":
                return None
            group = group or span.get("name")
            if agent is None and span.get("type") == "agent":
                agent = span.get("name")
            sid = str_or_none(span.get("parent_id"))
        return {"agent": agent, "group": group}

    def _inputs(self, ev: dict) -> list:
        """A model event's input messages; a de-duplicated log (format v3) gives them as
        ``input_refs``, ``[start, end)`` ranges into the sample's ``message_pool``."""
        messages = seq(ev.get("input"))
        if messages or not ev.get("input_refs"):
            return messages
        for ref in seq(ev.get("input_refs")):
            start, end = (ref, ref + 1) if isinstance(ref, int) else (seq(ref) + [None, None])[:2]
            if isinstance(start, int) and isinstance(end, int):
                messages.extend(self.pool[start:end])
        return messages

    def message(self, msg: dict, sid: str, where: dict, timestamp=None) -> None:
        role = str_or_none(msg.get("role"))
        base = dict(role=role, timestamp=timestamp, raw=plain(msg), group=where.get("group"))
        agent = role if role in ("user", "system") else where.get("agent") or ("environment" if role == "tool" else role)
        text, reasoning = _content(msg.get("content"))
        if reasoning:
            self.out.add(id=f"{sid}.reasoning", kind="thought", agent=agent, content=reasoning, **base)
        calls = seq(msg.get("tool_calls"))
        if role == "tool":
            self.out.add(id=sid, kind="tool_result", agent=agent, content=text or as_text(msg.get("error")),
                         tool_name=msg.get("function"), call_id=msg.get("tool_call_id"), **base)
            return
        if text or not calls:
            kind = "system" if role == "system" else "message"
            self.out.add(id=sid, kind=kind, agent=agent, content=text, **base)
        for call in calls:
            if isinstance(call, dict):
                self.tool_call(call.get("id"), call.get("function"), call.get("arguments"), agent, base, f"{sid}.call")

    def tool_call(self, call_id, name, args, agent, base, sid) -> None:
        call_id = str_or_none(call_id)
        args_text = json_text(args) or ""
        self.out.add(id=f"{sid}.{call_id}" if call_id else sid, kind="tool_call", agent=agent,
                     content=f"{name}({args_text})", tool_name=name, tool_args=args_text, call_id=call_id,
                     **{**base, "role": "assistant"})
        if call_id:
            self.calls.add(call_id)

    def event(self, i: int, ev: dict) -> None:
        kind = str_or_none(ev.get("event"))
        ts = parse_time(ev.get("timestamp"))
        if kind == "span_begin" and ev.get("id"):
            self.spans[str(ev["id"])] = {k: str_or_none(ev.get(k)) for k in ("name", "type", "parent_id")}
        ledger = self.out.ledger
        where = self._where(ev)
        if kind == "score" or where is None:  # the grade, or the grader's own conversation: hidden
            ledger.dropped("grader")
            return
        if kind in _SILENT:
            ledger.dropped("bookkeeping")  # span markers, state and store changes, sandbox calls
            return
        ledger.mapped()
        sid = f"events[{i}]"
        if kind == "model":
            for j, msg in enumerate(self._inputs(ev)):
                mid = str_or_none(msg.get("id")) if isinstance(msg, dict) else None
                if isinstance(msg, dict) and mid not in self.seen and msg.get("role") in ("system", "user"):
                    self.message(msg, f"{sid}.input[{j}]", where, ts)
                if mid:
                    self.seen.add(mid)
            output = obj(ev.get("output"))
            choices = seq(output.get("choices"))
            first = len(self.out.steps)
            if choices and isinstance(choices[0], dict) and isinstance(choices[0].get("message"), dict):
                msg = choices[0]["message"]
                self.message(msg, f"{sid}.output", where, parse_time(ev.get("completed")) or ts)
                if str_or_none(msg.get("id")):
                    self.seen.add(str(msg["id"]))
            if output.get("error"):
                self.out.add(id=f"{sid}.error", kind="error", content=as_text(output["error"]), raw=plain(ev),
                             timestamp=ts, **where)
            usage = obj(output.get("usage"))
            if len(self.out.steps) > first:
                self.out.steps[first].tokens_in = as_int(usage.get("input_tokens"))
                self.out.steps[first].tokens_out = as_int(usage.get("output_tokens"))
                self.out.steps[first].attributes["model"] = output.get("model") or ev.get("model")
        elif kind == "tool":
            call_id = str_or_none(ev.get("id"))
            base = dict(timestamp=ts, raw=plain(ev), group=where.get("group"))
            if call_id not in self.calls:
                self.tool_call(call_id, ev.get("function"), ev.get("arguments"), where.get("agent"), base, sid)
            error = ev.get("error")
            step = self.out.add(id=f"{sid}.result", kind="tool_result", role="tool", agent=where.get("agent") or "environment",
                                content=_content(ev.get("result"))[0] or (as_text(error) if error else ""),
                                tool_name=ev.get("function"), call_id=call_id,
                                **{**base, "timestamp": parse_time(ev.get("completed")) or ts})
            if error:
                step.attributes["error"] = plain(error)
        elif kind in ("error", "sample_limit"):
            detail = ev.get("error") if kind == "error" else ev
            text = as_text(detail.get("message") if isinstance(detail, dict) else detail)
            if kind == "sample_limit":
                text = f"limit reached ({ev.get('type')}): {ev.get('message') or ''}".strip()
            self.out.add(id=sid, kind="error", content=text, raw=plain(ev), timestamp=ts, **where)
        elif kind in ("info", "logger"):
            body = ev.get("data") if kind == "info" else obj(ev.get("message")).get("message")
            self.out.add(id=sid, kind="log", content=compact(body), raw=plain(ev), timestamp=ts, **where)
        elif kind in _EVENT_STEPS:
            self.out.add(id=sid, kind="event", content=f"[{kind}] " + compact(ev.get("input") or ev.get("name") or ev),
                         raw=plain(ev), timestamp=ts, **where)
        else:
            self.out.unknown_event(str(kind), plain(ev), id=sid, timestamp=ts, **where)


def _outcome(sample: dict) -> tuple[str, float | None]:
    """(outcome, score) from the first scorer's value; a sample error or limit is a failure."""
    first = next(iter(obj(sample.get("scores")).values()), None)
    value = first.get("value") if isinstance(first, dict) else None
    if isinstance(value, dict):
        value = next(iter(value.values()), None)
    score: float | None = None
    if isinstance(value, bool):
        score = 1.0 if value else 0.0
    elif isinstance(value, (int, float)):
        score = float(value)
    elif isinstance(value, str) and value.upper() in _GRADES:
        score = _GRADES[value.upper()]
    if sample.get("error") or sample.get("limit"):
        return "failure", score
    if score is None:
        return "unknown", None
    return ("success" if score >= 1.0 else "failure"), score


def sample_record(path: Path, header: dict, sample: object, where: str, opts: ImportOptions) -> ImportedRecord:
    """The trajectory of one sample of an Inspect log."""
    if not isinstance(sample, dict) or "id" not in sample:
        raise ImportFailure(str(path), "not an Inspect sample (needs 'id')", where=where)
    sample = _resolve(sample, obj(sample.get("attachments")))
    ev = obj(header.get("eval"))
    builder = _SampleSteps(seq(sample.get("message_pool")))
    events = seq(sample.get("events"))
    records = events or seq(sample.get("messages"))
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            builder.out.ledger.dropped("not an object")
        elif events:
            builder.event(i, record)
        else:
            builder.out.ledger.mapped()
            builder.message(record, f"messages[{i}]", {})
    outcome, score = _outcome(sample)
    hidden = {k: sample[k] for k in ("scores", "target", "metadata", "error", "limit") if sample.get(k)}
    if isinstance(header.get("results"), dict):
        hidden["results"] = header["results"]
    task_input = sample.get("input")
    task = task_input if isinstance(task_input, str) else "\n".join(
        _content(m.get("content"))[0] for m in seq(task_input) if isinstance(m, dict) and m.get("role") == "user")
    epoch = sample.get("epoch", 1)
    traj = Trajectory(
        id=stable_id("inspect_ai", ev.get("run_id") or ev.get("eval_id") or path.name, ev.get("task_id"),
                     sample["id"], epoch),
        source_format="inspect_ai",
        source_path=str(path),
        source_ref=f"{where} (sample {sample['id']}, epoch {epoch})",
        title=f"{str_or_none(ev.get('task')) or path.stem} #{sample['id']} epoch {epoch}",
        system=(ev.get("solver") or None) if isinstance(ev.get("solver"), str) else None,
        model=ev.get("model") if isinstance(ev.get("model"), str) else None,
        benchmark=ev.get("task") if isinstance(ev.get("task"), str) else None,
        task=task or None,
        outcome=outcome,
        score=score,
        metadata={"sample_id": sample["id"], "epoch": epoch, "status": header.get("status"),
                  **{k: ev[k] for k in ("task_id", "run_id", "created", "dataset") if k in ev}, HIDDEN: hidden},
        raw=orjson.dumps(sample, default=str),
        steps=builder.out.steps,
    )
    return ImportedRecord(trajectory=finish(traj, opts), ledger=builder.out.ledger)


def _zip_json(path: Path, zf: zipfile.ZipFile, member: str, opts: ImportOptions) -> object:
    info = zf.getinfo(member)
    if info.file_size > opts.max_bytes:
        raise ImportFailure(str(path), f"member is {info.file_size:,} bytes, over the import limit", where=member)
    try:
        return orjson.loads(zf.read(member))
    except orjson.JSONDecodeError as exc:
        raise ImportFailure(str(path), f"malformed JSON: {exc.msg}", where=member) from exc
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error, NotImplementedError, RuntimeError) as exc:
        # corrupt data, an unsupported compression method or an encrypted member
        raise ImportFailure(str(path), f"unreadable zip member: {exc}", where=member) from exc


def _sample_order(name: str) -> tuple:
    stem = name.rsplit("/", 1)[-1].removesuffix(".json")
    sid, _, epoch = stem.rpartition("_epoch_")
    return (as_int(sid) if as_int(sid) is not None else 0, sid, as_int(epoch) or 0)


class InspectAI(Importer):
    name = "inspect_ai"
    description = "Inspect AI eval log: .eval zip or .json (one trajectory per sample and epoch)"

    def sniff(self, head: Head) -> bool:
        if head.kind == "zip":
            return "header.json" in head.zip_members and any(m.startswith("samples/") for m in head.zip_members)
        keys = head.keys("")
        return head.kind == "json" and {"version", "eval"} <= keys and bool(keys & {"samples", "results"})

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        if zipfile.is_zipfile(path):
            yield from self._read_zip(path, opts)
            return
        log = load_json(path)
        if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
            raise ImportFailure(str(path), "not an Inspect log (needs 'eval')")
        samples = log.get("samples") or []
        if not isinstance(samples, list):
            raise ImportFailure(str(path), "'samples' is not a list")
        for i, sample in enumerate(samples):
            yield sample_record(path, log, sample, f"samples[{i}]", opts)

    def _read_zip(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
                if "header.json" not in names:
                    raise ImportFailure(str(path), "zip is not an Inspect log (no header.json)")
                header = _zip_json(path, zf, "header.json", opts)
                if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
                    raise ImportFailure(str(path), "header.json is not an Inspect log header", where="header.json")
                members = sorted((n for n in names if n.startswith("samples/") and n.endswith(".json")),
                                 key=_sample_order)
                for member in members:
                    yield sample_record(path, header, _zip_json(path, zf, member, opts), member, opts)
        except zipfile.BadZipFile as exc:
            raise ImportFailure(str(path), f"broken zip archive: {exc}") from exc
