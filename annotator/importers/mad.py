"""MAD / MAST-Data records (Cemri et al., arXiv 2503.13657): the LLM-labelled full file and the
three-annotator human file.

Full records carry the judge's 14 yes/no answers (``mast_annotation``), stored as labels of
annotator ``mad-llm``; a record without them (an unlabelled trace in MAD's layout, as other
MAST tools write them) is a trajectory to annotate. Human records carry three annotators' booleans per failure mode under
one of three taxonomy versions (the record's ``round``); each round's codes are mapped to
final MAST ids by content (tables in MAST.md §6.3, conservative column: codes whose mapping is
disputed or that were dropped stay unmapped, are kept in the label extras and the metadata,
and are reported — never guessed). Several early codes folding onto one final id are OR-ed per
annotator. Embedded human notes and the outcome (``note``, ``other_data``) are moved out of
the steps into hidden metadata so they cannot leak to an annotator or a judge.
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
from annotator.importers.reading import iter_records, optional_text, require
from annotator.importers.log_splitters import Split, log_facts, split_evaluation, split_log
from annotator.label_sources import HUMAN_SET
from annotator.models import HIDDEN, Label, Step, Trajectory

LLM_ANNOTATOR = "mad-llm"
HUMAN_ANNOTATORS = ("annotator_1", "annotator_2", "annotator_3")

#: Early-round codes -> final MAST ids, by round. None = dropped or disputed: kept unmapped.
ROUND_1 = {
    "1.1": "FM-1.1", "1.2": "FM-2.6", "1.3": "FM-2.2", "1.4": "FM-2.2", "1.5": "FM-1.5",
    "2.1": None, "2.2": "FM-1.3", "2.3": None, "2.4": "FM-2.1", "2.5": "FM-2.3", "2.6": "FM-1.2",
    "3.1": None, "3.2": "FM-2.4", "3.3": "FM-2.5", "3.4": None,
    "4.1": "FM-3.1", "4.2": "FM-3.2", "4.3": "FM-3.3",
}
ROUNDS_2_3 = {
    "1.1": "FM-1.1", "1.2": "FM-2.6", "1.3": "FM-1.5", "1.4": None, "1.5": "FM-1.3", "1.6": None,
    "1.7": "FM-1.2", "2.1": "FM-2.1", "2.2": "FM-2.2", "2.3": "FM-2.3", "2.4": "FM-2.2", "2.5": None,
    "2.6": "FM-2.4", "2.7": "FM-2.5", "3.1": "FM-3.1", "3.2": "FM-3.3", "3.3": "FM-3.2",
}
FINAL = {f"{c}.{m}": f"FM-{c}.{m}" for c, n in ((1, 5), (2, 6), (3, 3)) for m in range(1, n + 1)}


def mapping_for(round_name: str) -> tuple[str, dict[str, str | None]]:
    """(mapping name, code table) for a MAD human record's ``round``."""
    r = round_name.strip().lower()
    if r == "round 1":
        return "mad-round-1", ROUND_1
    if r in ("round 2", "round 3"):
        return "mad-rounds-2-3", ROUNDS_2_3
    return "mad-final", FINAL


_CODE = re.compile(r"^\s*(\d+\.\d+)\s*(.*)")


def trace_steps(trace: object, system: str | None, path: Path, where: str) -> tuple[list[Step], dict, dict]:
    """Steps, metadata and hidden metadata of a MAD trace (JSON text, an object or raw log text).

    ``note`` (earlier human labels), ``other_data`` (the outcome) and a log's trailing
    evaluation block go to the hidden metadata, never into a step.
    """
    meta: dict = {}
    hidden: dict = {}
    data = trace
    if isinstance(trace, str) and trace.lstrip()[:1] == "{":
        try:
            data = orjson.loads(trace)
        except orjson.JSONDecodeError:
            data = trace
    if isinstance(data, dict):
        for key in ("note", "other_data"):
            if key in data:
                hidden[key] = data[key]
        for key in ("instance_id", "run_id", "timestamp", "cost", "log_file"):
            if key in data:
                meta[key] = data[key]
        task = data.get("problem_statement", data.get("prompt"))
        if task is not None:
            meta["task"] = as_text(task)
        inner = data.get("trajectory", data.get("content"))
        if isinstance(inner, list) and all(isinstance(line, str) for line in inner):
            inner = "\n".join(inner)
        if isinstance(inner, list):
            return _message_steps(inner, path, where), meta, hidden
        if isinstance(inner, str):
            return log_steps(inner, system, hidden), _with_log_task(meta, inner, system), hidden
        raise ImportFailure(str(path), "trace object has no 'trajectory' or 'content'", where=where)
    if isinstance(data, str):
        return log_steps(data, system, hidden), _with_log_task(meta, data, system), hidden
    raise ImportFailure(str(path), f"unexpected trace of type {type(data).__name__}", where=where)


def _with_log_task(meta: dict, text: str, system: str | None) -> dict:
    """``meta`` with the task the log itself states (MetaGPT's UserRequirement), when the trace
    named none."""
    task = None if "task" in meta else log_facts(text, system).get("task")
    if task:
        meta["task"] = task
    return meta


def _message_steps(messages: list, path: Path, where: str) -> list[Step]:
    """AG2-style ``{content: [str], role, name}`` messages, one step each, ``name`` as the agent."""
    steps = []
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ImportFailure(str(path), "trajectory item is not a message", where=f"{where} trajectory[{i}]")
        agent = msg.get("name") or msg.get("role")
        role = msg.get("role")
        steps.append(Step(index=i, id=f"trajectory[{i}]", agent=None if agent is None else str(agent),
                          role=None if role is None else str(role), kind="message",
                          content=as_text(msg.get("content")), raw=msg))
    return steps


def log_steps(text: str, system: str | None, hidden: dict) -> Split:
    """A console log's steps (with the noise blocks left out, counted in ``dropped``); its trailing
    evaluation block, if any, goes to ``hidden``."""
    text, verdict = split_evaluation(text)
    if verdict is not None:
        hidden["evaluation"] = verdict
    return split_log(text, system)


def outcome_of(hidden: dict) -> str:
    """success / failure / unknown from ``other_data.correct`` or an evaluation's ``success``."""
    other = hidden.get("other_data")
    correct = other.get("correct") if isinstance(other, dict) else None
    if correct is None and isinstance(hidden.get("evaluation"), dict):
        correct = hidden["evaluation"].get("success")
    if not isinstance(correct, (bool, int)):
        return "unknown"
    return "success" if correct else "failure"


class MadFull(Importer):
    name = "mad_full"
    self_contained = True
    description = "MAD / MAST-Data records (mas_name, trace.trajectory; LLM labels from mast_annotation if present)"

    def sniff(self, head: Head) -> bool:
        """MAD's layout, labelled or not: other MAST tools write unlabelled traces the same way,
        to be annotated. Records with ``annotations`` are the human file's."""
        keys = head.record_keys()
        return head.kind == "json" and "mas_name" in keys and bool(keys & {"mast_annotation", "trace"}) \
            and "annotations" not in keys

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        for n, rec in iter_records(path):
            with record_values(path, f"record {n}"):
                item = self._record(path, n, rec, opts)
            yield item

    def _record(self, path: Path, n: int, rec: object, opts: ImportOptions) -> ImportedRecord:
        where = f"record {n}"
        rec = require(path, rec, ("mas_name", "trace"), where)
        trace = rec["trace"]
        inner = trace.get("trajectory") if isinstance(trace, dict) else trace
        if inner is None:
            raise ImportFailure(str(path), "trace has no 'trajectory'", where=where)
        system, model, benchmark = (optional_text(path, rec, k, where) for k in ("mas_name", "llm_name", "benchmark_name"))
        steps, meta, hidden = trace_steps(inner, system, path, where)
        meta.update({k: rec[k] for k in ("trace_id", "llm_name", "benchmark_name") if k in rec})
        meta["record"] = n
        if hidden:
            meta[HIDDEN] = hidden
        ident = (system, benchmark, model, rec.get("trace_id"), n)
        traj = finish(Trajectory(
            id=stable_id("mad", *ident),
            source_format=self.name, source_path=str(path), source_ref=where,
            title="/".join(str(x) for x in ident[:4]),
            system=system, model=model, benchmark=benchmark,
            task=meta.pop("task", None), outcome=outcome_of(hidden), metadata=meta,
            raw=orjson.dumps(rec), steps=steps,
        ), opts)
        ledger = Ledger()
        ledger.mapped()  # the record is the trajectory
        labels = self._labels(traj.id, rec["mast_annotation"], path, where, ledger) if "mast_annotation" in rec else []
        return ImportedRecord(trajectory=traj, labels=labels, ledger=ledger)

    @staticmethod
    def _labels(traj_id: str, annotation: object, path: Path, where: str, ledger: Ledger) -> list[Label]:
        if not isinstance(annotation, dict):
            raise ImportFailure(str(path), "'mast_annotation' must be an object", where=where)
        labels = []
        for code, value in annotation.items():
            mode = FINAL.get(str(code).strip().removeprefix("FM-"))
            if mode is None:
                ledger.warn("label", f"{where}: unknown MAST code {code!r} kept in the raw record only")
                continue
            verdict = "present" if value in (1, True, "1", "yes") else "absent" if value in (0, False, "0", "no") else "unknown"
            labels.append(Label(trajectory_id=traj_id, mode_id=mode, annotator=LLM_ANNOTATOR, verdict=verdict,
                                provenance="imported",
                                extra={"source": "mad", "code": code, "value": value,
                                       **({"verification_ambiguous": True} if mode in ("FM-3.2", "FM-3.3") else {})}))
        return labels


class MadHuman(Importer):
    name = "mad_human"
    self_contained = True
    description = "MAD human-labelled records (round, trace, three annotators per failure mode)"

    def sniff(self, head: Head) -> bool:
        return head.kind == "json" and {"round", "annotations", "trace"} <= head.record_keys()

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        for n, rec in iter_records(path):
            with record_values(path, f"record {n}"):
                item = self._record(path, n, rec, opts)
            yield item

    def _record(self, path: Path, n: int, rec: object, opts: ImportOptions) -> ImportedRecord:
        where = f"record {n}"
        rec = require(path, rec, ("round", "trace", "annotations"), where)
        system, benchmark = optional_text(path, rec, "mas_name", where), optional_text(path, rec, "benchmark_name", where)
        steps, meta, hidden = trace_steps(rec["trace"], system, path, where)
        mapping_name, table = mapping_for(str(rec["round"]))
        meta.update({"round": rec["round"], "trace_id": rec.get("trace_id"), "record": n,
                     "code_mapping": mapping_name})
        ident = (system, benchmark, rec.get("trace_id"), rec["round"], n)
        traj_id = stable_id("mad-human", *ident)
        labels, unmapped = self._labels(traj_id, rec["annotations"], table, mapping_name, path, where)
        if unmapped:
            hidden["unmapped_codes"] = unmapped
        if hidden:
            meta[HIDDEN] = hidden
        traj = finish(Trajectory(
            id=traj_id, source_format=self.name, source_path=str(path), source_ref=where,
            title=f"{system}/{benchmark}/{rec.get('trace_id')} ({rec['round']})",
            system=system, benchmark=benchmark, task=meta.pop("task", None),
            outcome=outcome_of(hidden), metadata=meta, raw=orjson.dumps(rec), steps=steps,
        ), opts)
        ledger = Ledger()
        ledger.mapped()  # the record is the trajectory
        for u in unmapped:
            ledger.warn("label", f"{where}: code {u['code']} ({u['title']}) of {rec['round']} has no final MAST id;"
                                 " kept unmapped")
        return ImportedRecord(trajectory=traj, labels=labels, ledger=ledger)

    @staticmethod
    def _labels(traj_id: str, annotations: object, table: dict, mapping_name: str, path: Path,
                where: str) -> tuple[list[Label], list[dict]]:
        if not isinstance(annotations, list):
            raise ImportFailure(str(path), "'annotations' must be a list", where=where)
        votes: dict[tuple[str, str], list[dict]] = {}
        unmapped: list[dict] = []
        for i, ann in enumerate(annotations):
            if not isinstance(ann, dict) or "failure mode" not in ann:
                raise ImportFailure(str(path), "annotation without 'failure mode'", where=f"{where} annotations[{i}]")
            m = _CODE.match(str(ann["failure mode"]))
            if not m:
                raise ImportFailure(str(path), f"failure mode without a code: {str(ann['failure mode'])[:60]!r}",
                                    where=f"{where} annotations[{i}]")
            code, title = m[1], m[2].split("\n")[0].strip()
            values = {a: _bool(ann.get(a)) for a in HUMAN_ANNOTATORS}
            mode = table.get(code)
            if mode is None:
                unmapped.append({"code": code, "title": title, "values": values})
                continue
            for a, v in values.items():
                votes.setdefault((a, mode), []).append({"code": code, "title": title, "value": v})
        labels = []
        for (a, mode), codes in sorted(votes.items()):
            known = [c["value"] for c in codes if c["value"] is not None]
            verdict = "present" if any(known) else "absent" if known else "unknown"
            extra = {"source": HUMAN_SET, "mapping": mapping_name, "codes": codes}
            if mode in ("FM-3.2", "FM-3.3"):
                extra["verification_ambiguous"] = True
            labels.append(Label(trajectory_id=traj_id, mode_id=mode, annotator=f"mad-human-{a[-1]}",
                                verdict=verdict, provenance="imported", extra=extra))
        return labels, unmapped


def _bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    if isinstance(value, (int, float)):
        return bool(value)
    return None
