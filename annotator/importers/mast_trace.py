"""MAST per-trace JSON: one run of the MAST ``traces/`` folders as a file of its own.

The AG2 shape (also embedded in MAD human records) is ``{instance_id, problem_statement,
other_data, trajectory: [{content: [str], role, name}], note}``; HyperAgent files hold the
log lines in ``trajectory``; MetaGPT runs are ``{run_id, prompt, content, timestamp, cost,
log_file}``. The steps come from :func:`~annotator.importers.mad.trace_steps`, which moves
``note`` (earlier human labels) and ``other_data`` (the outcome) into hidden metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from annotator.importers.accounting import Ledger
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, finish, record_values, stable_id
from annotator.importers.detect import Head
from annotator.importers.mad import outcome_of, trace_steps
from annotator.importers.reading import load_json, require
from annotator.importers.log_splitters import guess_system
from annotator.models import HIDDEN, Trajectory

#: Keys of other formats that also carry a ``trajectory`` (SWE-agent ``.traj``).
_FOREIGN = {"info", "environment", "replay_config", "mast_annotation", "annotations"}


class MastTrace(Importer):
    name = "mast_trace"
    description = "MAST per-trace JSON (instance_id, problem_statement, trajectory; MetaGPT run_id/prompt/content)"

    def sniff(self, head: Head) -> bool:
        if head.kind != "json" or head.root != "object":
            return False
        keys = head.keys("")
        if keys & _FOREIGN:
            return False
        ag2 = "trajectory" in keys and bool(keys & {"instance_id", "problem_statement"})
        metagpt = {"run_id", "prompt", "content", "log_file"} <= keys
        return ag2 or metagpt

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        raw = path.read_bytes()
        with record_values(path):
            rec = require(path, load_json(path, raw), ())
            system = _system_of(rec)
            steps, meta, hidden = trace_steps(rec, opts.system or system, path, "trace")
            if hidden:
                meta[HIDDEN] = hidden
            ident = rec.get("instance_id", rec.get("run_id"))
            traj = finish(Trajectory(
                id=stable_id(self.name, path.name if ident is None else ident),
                source_format=self.name, source_path=str(path), title=path.stem,
                system=system, task=meta.pop("task", None), outcome=outcome_of(hidden),
                metadata=meta, raw=raw, steps=steps,
            ), opts)
            ledger = Ledger()
            messages = rec.get("trajectory")
            # AG2: each message is a step; a log (lines or text) is one record split into steps.
            ledger.mapped(len(messages) if isinstance(messages, list) and not _lines(messages) else 1)
            item = ImportedRecord(trajectory=traj, ledger=ledger)
        yield item


def _system_of(rec: dict) -> str | None:
    """AG2 for a list of named messages, MetaGPT for a ``run_id`` run, else what the log's markers say."""
    inner = rec.get("trajectory", rec.get("content"))
    if isinstance(inner, list) and inner and all(isinstance(m, dict) and "name" in m for m in inner):
        return "AG2"
    if isinstance(inner, list) and _lines(inner):
        inner = "\n".join(inner)
    if isinstance(inner, str):
        return guess_system(inner) or ("MetaGPT" if "run_id" in rec else None)
    return None


def _lines(items: list) -> bool:
    """Whether a trace's ``trajectory`` list holds log lines (HyperAgent) rather than messages."""
    return all(isinstance(line, str) for line in items)
