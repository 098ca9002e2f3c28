"""Exports of labels: long JSONL/CSV, a wide trajectory × mode CSV, and MAD-compatible JSON.

An export holds exactly what a report over the same source and filters counts: each source's
finished trajectories and its current verdicts on the codebook's modes. Long rows carry the
trajectory fields a report groups by (system, model, benchmark, outcome, number of steps), so
every number of a report can be recomputed from the export alone; ``mast import`` reads the
JSONL back (format ``mast_export``) and restores the same labels. The MAD form writes
``mast_annotation`` dicts keyed by bare codes ("1.1" … "3.3") so results flow back into MAST's
own tooling; an undecided cell is null there. CSV cells that a spreadsheet would run as a
formula get a leading ``'`` (``text.spreadsheet_cell``); the JSONL keeps every value exact.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Literal, TextIO

import orjson
from sqlite_utils import Database

from annotator.errors import ReportError
from annotator.label_sources import SourceKind, is_stored
from annotator.report.frame import OUTCOME_NAMES, Frame, build
from annotator.report.sources import Source, resolve
from annotator.store import export_lines
from annotator.taxonomy import Taxonomy
from annotator.text import inert_json, inert_json_bytes, json_text, spreadsheet_cell
from annotator.views import TrajectoryFilter

ExportFormat = Literal["jsonl", "csv", "wide-csv", "mad-json"]
FORMATS: tuple[str, ...] = ExportFormat.__args__  # type: ignore[attr-defined]

#: The long form's columns: the stored label fields, with the source after the trajectory id.
LONG_COLUMNS = [
    "format", "schema_version", "trajectory_id", "source",
    *(f for f in export_lines.LABEL_FIELDS if f != "trajectory_id"), *export_lines.TRAJECTORY_FIELDS,
]
def _frames(db: Database, sources: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None) -> list[Frame]:
    return [build(db, [s], taxonomy, filters) for s in _names(sources)]


def _names(sources: list[str]) -> list[str]:
    """The distinct stored sources named, in order; computed ones (consensus) are refused."""
    if not all(is_stored(s) for s in sources):
        raise ReportError("consensus is computed, not stored: export its members' labels and report over"
                          " consensus:<names> on the import")
    if not sources:
        raise ReportError("name at least one label source (--source)")
    return list(dict.fromkeys(sources))


def _trajectory_fields(frame: Frame, i: int) -> dict:
    return {
        "system": _none(frame.groups["system"][i]), "model": _none(frame.groups["model"][i]),
        "benchmark": _none(frame.groups["benchmark"][i]), "outcome": OUTCOME_NAMES[int(frame.failed[i])],
        "n_steps": int(frame.n_steps[i]), "title": frame.titles[i],
    }


def _none(value: str) -> str | None:
    return None if value == "-" else value


def _finished(db: Database, source: Source, taxonomy: Taxonomy, filters: TrajectoryFilter) -> export_lines.Finished:
    """Which of its trajectories a source has finished, as ``export_lines`` selects them: the
    rule of ``report.sources.load`` for each kind of source, so that an export holds what a
    report over the same source counts."""
    if source.kind is SourceKind.PERSON:
        return export_lines.Finished(source.name, reviewed=True)
    if source.kind is SourceKind.RUN:
        covered = export_lines.modes_with_verdicts(db, source.name, taxonomy.mode_ids, filters)
        return export_lines.Finished(source.name, all_of=covered or taxonomy.mode_ids)
    if source.kind is SourceKind.ADJUDICATED:
        return export_lines.Finished(source.name, all_of=taxonomy.mode_ids)
    return export_lines.Finished(source.name)  # an imported set has finished every trajectory it has labels for


def _blocks(db: Database, sources: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None) -> Iterator[bytes]:
    """The JSONL lines of every (trajectory, mode, source) verdict, a block of whole
    trajectories at a time, in trajectory order, the sources of a trajectory together (in the
    order named), so an import reads one trajectory at a time."""
    filters = filters or TrajectoryFilter()
    rules = [_finished(db, resolve(db, name), taxonomy, filters) for name in _names(sources)]
    return export_lines.export_lines(db, rules, taxonomy.mode_ids, filters)


def long_rows(db: Database, sources: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None = None) -> Iterator[dict]:
    """One dict per (trajectory, mode, source) verdict (``LONG_COLUMNS``), in trajectory order."""
    for block in _blocks(db, sources, taxonomy, filters):
        yield from map(orjson.loads, block.splitlines())


def wide_rows(db: Database, sources: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None = None) -> Iterator[dict]:
    """One dict per (trajectory, source): 1/0 per mode, None where the source left a cell undecided."""
    for frame in _frames(db, sources, taxonomy, filters):
        name = next(iter(frame.labels))
        lab = frame.labels[name]
        for i, tid in enumerate(frame.ids.tolist()):
            row = {"trajectory_id": tid, "source": name, **_trajectory_fields(frame, i)}
            for j, mode in enumerate(frame.mode_ids):
                row[mode] = int(lab.present[i, j]) if lab.known[i, j] else None
            yield row


def mad_records(db: Database, sources: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None = None) -> list[dict]:
    """MAD-style records: ``mast_annotation`` keyed by bare codes, one record per trajectory and source."""
    codes = {m.id: m.code for m in taxonomy.modes}
    out = []
    for row in wide_rows(db, sources, taxonomy, filters):
        out.append({
            "mas_name": row["system"], "llm_name": row["model"], "benchmark_name": row["benchmark"],
            "trace_id": row["trajectory_id"], "annotator": row["source"], "outcome": row["outcome"],
            "mast_annotation": {codes[m]: row.get(m) for m in taxonomy.mode_ids},
        })
    return out


def _cell(value: object) -> object:
    """A CSV cell: empty for None, JSON for lists and dicts, neutralised for spreadsheets."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        value = orjson.dumps(value).decode()
    return spreadsheet_cell(value)


def _write_jsonl(blocks: Iterator[bytes], out: TextIO) -> None:
    """Write the blocks of JSONL to ``out``, raw control characters made inert; as bytes to
    the file under a text stream that has one (decoding and encoding again would cost more
    than SQLite takes to write them)."""
    raw = getattr(out, "buffer", None)
    if raw is None or getattr(out, "encoding", "").lower().replace("-", "") != "utf8":
        for block in blocks:
            out.write(inert_json(block))
        return
    out.flush()
    for block in blocks:
        raw.write(inert_json_bytes(block))
    raw.flush()


def write_export(db: Database, fmt: str, sources: list[str], taxonomy: Taxonomy, out: TextIO,
                 filters: TrajectoryFilter | None = None) -> None:
    """Write the export in one of ``FORMATS`` to ``out``, row by row (the JSONL and CSV forms)."""
    if fmt == "jsonl":
        _write_jsonl(_blocks(db, sources, taxonomy, filters), out)
        return
    if fmt == "mad-json":
        out.write(json_text(mad_records(db, sources, taxonomy, filters), orjson.OPT_INDENT_2) + "\n")
        return
    if fmt == "csv":
        columns, rows = LONG_COLUMNS, long_rows(db, sources, taxonomy, filters)
    elif fmt == "wide-csv":
        columns = ["trajectory_id", "source", "system", "model", "benchmark", "outcome", "n_steps", "title",
                   *taxonomy.mode_ids]
        rows = wide_rows(db, sources, taxonomy, filters)
    else:
        raise ReportError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in columns])


def render(db: Database, fmt: str, sources: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None = None) -> str:
    """The export as one string (small exports and tests); :func:`write_export` streams."""
    buf = io.StringIO()
    write_export(db, fmt, sources, taxonomy, buf, filters)
    return buf.getvalue()
