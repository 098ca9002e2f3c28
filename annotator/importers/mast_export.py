"""Our own label export (``mast export --format jsonl``), read back into a database.

Every line is one verdict of one source on one mode of one trajectory, tagged
``"format": "mast-labels"`` (that tag is what detection looks for, so no other format can be
mistaken for it). The trajectories themselves are not in an export: each becomes a stub with
the exported id, system, model, benchmark, outcome and title, and the original's number of
steps (so onsets keep their place; the store shows placeholder steps for it). A stub never
replaces a trajectory already in the database, and importing the real trajectory later
replaces the stub and keeps the labels. Stubs carry no steps, so no content hash is computed.

An export has hundreds of thousands of lines, so a line that holds a row exactly as ``mast
export`` writes it (every label field there, each of the type and form the store keeps) is
decoded and checked at once by msgspec into :class:`Written`, which goes straight into its
stored form, its timestamp kept as the text it is: parsing each line into a dict and checking
its fields in Python took four times as long. Any other line is parsed as JSON and its row read
field by field, through the ``Label`` model where a value needs converting, which names the
field it cannot read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec
from pydantic import ValidationError

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, invalid_value
from annotator.importers.detect import Head
from annotator.importers.reading import iter_jsonl, require
from annotator.models import LABEL_EXPORT_FORMAT, SCHEMA_VERSION, Label, Provenance, Trajectory, Verdict, utcnow
from annotator.store._json import dumps
from annotator.store.labels import label_row
from annotator.store.export_lines import LABEL_FIELDS
from annotator.store.steps import STUB_HASH

_REQUIRED = ("trajectory_id", "source", "mode_id", "verdict", "provenance")
_REQUIRED_KEYS = frozenset(_REQUIRED)
#: The optional label fields of a row: every stored label field but the required ones.
_LABEL_FIELDS = tuple(f for f in LABEL_FIELDS if f not in _REQUIRED_KEYS)


def _stub(row: dict, path: Path, opts: ImportOptions) -> ImportedRecord:
    """The stub of the row's trajectory, with the user's --system/--model/--benchmark applied."""
    given = {k: getattr(opts, k) if getattr(opts, k) is not None else row.get(k) for k in ("system", "model", "benchmark")}
    traj = Trajectory(
        id=row["trajectory_id"], source_format=MastExport.name, source_path=str(path), title=row.get("title"),
        outcome=row.get("outcome") or "unknown", metadata={"label_export_stub": True}, content_hash=STUB_HASH,
        **given,
    )
    return ImportedRecord(trajectory=traj, stub=True, stub_steps=int(row.get("n_steps") or 0))


def _label(row: dict) -> Label:
    values = {k: v for k in _LABEL_FIELDS if (v := row.get(k)) is not None}
    return Label(trajectory_id=row["trajectory_id"], mode_id=row["mode_id"], annotator=row["source"],
                 verdict=row["verdict"], provenance=row["provenance"], **values)


_VERDICTS = frozenset(get_args(Verdict))
_PROVENANCES = frozenset(get_args(Provenance))


def _text(value: object) -> bool:
    return value is None or type(value) is str


def _integer(value: object) -> bool:
    return value is None or type(value) is int


class Written(msgspec.Struct):
    """A row as ``mast export`` writes it: every label field there (nulls included), each of the
    type the store keeps; the fields of the trajectory's stub, which the first row of each
    trajectory gives, may be left out."""

    format: Literal[LABEL_EXPORT_FORMAT]
    schema_version: Literal[SCHEMA_VERSION]
    trajectory_id: str
    mode_id: str
    source: str
    verdict: Verdict
    provenance: Provenance
    onset_step: int | None
    evidence_steps: list[int]
    quote: str | None
    note: str | None
    rationale: str | None
    confidence: Annotated[float, msgspec.Meta(ge=0, le=1)] | None
    run_id: int | None
    grounded: bool | None
    taxonomy_hash: str | None
    extra: dict[str, Any]
    created_at: str
    system: str | None = None
    model: str | None = None
    benchmark: str | None = None
    outcome: str | None = None
    n_steps: int | None = None
    title: str | None = None


_decode_written = msgspec.json.Decoder(Written).decode
_STUB_FIELDS = ("trajectory_id", "system", "model", "benchmark", "outcome", "n_steps", "title")


def _written(line: bytes) -> Written | None:
    """The line's row if it is as ``mast export`` writes it (its time too), else None."""
    try:
        row = _decode_written(line)
    except msgspec.DecodeError:  # not JSON, or not such a row: read as any line
        return None
    return row if _canonical_time(row.created_at) else None


def _written_label(row: Written) -> tuple:
    """The stored form of a :class:`Written` row (as :func:`_stored_label`'s direct path)."""
    steps, grounded, extra = row.evidence_steps, row.grounded, row.extra
    return (
        SCHEMA_VERSION, row.trajectory_id, row.mode_id, row.source, row.verdict, row.onset_step,
        dumps(steps) if steps else "[]", row.quote, row.note, row.rationale, row.confidence, row.provenance,
        row.run_id, None if grounded is None else int(grounded), row.taxonomy_hash, None,
        dumps(extra) if extra else "{}", row.created_at,
    )


def _stored_label(row: dict) -> tuple:
    """The row's label in stored form (``label_row``): checked field by field when every value
    already has its stored type, through the ``Label`` model otherwise (a ValidationError
    names the first bad field)."""
    g = row.get
    tid, mode, source, verdict, provenance = row["trajectory_id"], row["mode_id"], row["source"], row["verdict"], row["provenance"]
    onset, steps, quote, note, rationale = g("onset_step"), g("evidence_steps"), g("quote"), g("note"), g("rationale")
    confidence, run_id, grounded, taxonomy_hash, extra = g("confidence"), g("run_id"), g("grounded"), g("taxonomy_hash"), g("extra")
    created = g("created_at")
    if (
        type(tid) is str and type(mode) is str and type(source) is str
        and type(verdict) is str and verdict in _VERDICTS and type(provenance) is str and provenance in _PROVENANCES
        and _integer(onset) and _integer(run_id) and _text(quote) and _text(note) and _text(rationale)
        and _text(taxonomy_hash) and (grounded is None or type(grounded) is bool)
        and (confidence is None or (type(confidence) in (float, int) and 0 <= confidence <= 1))
        and (steps is None or (type(steps) is list and (not steps or all(type(i) is int for i in steps))))
        and (extra is None or type(extra) is dict)
        and (created is None or (type(created) is str and _canonical_time(created)))
    ):
        return (
            SCHEMA_VERSION, tid, mode, source, verdict, onset, dumps(steps) if steps else "[]", quote, note, rationale,
            None if confidence is None else float(confidence), provenance, run_id,
            None if grounded is None else int(grounded), taxonomy_hash, None, dumps(extra) if extra else "{}",
            utcnow().isoformat() if created is None else created,
        )
    return label_row(_label(row))


#: A time as ``datetime.isoformat`` writes it (what the store keeps): seconds or microseconds, an
#: offset in hours and minutes or none.
_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{6})?(?:[+-]\d\d:\d\d)?").fullmatch


@lru_cache(maxsize=4096)  # the labels of one trajectory by one source mostly share their time
def _canonical_time(text: str) -> bool:
    """Whether ``text`` is a valid time in the form the store writes, so it can be kept as it is."""
    if _ISO_TIME(text) is None:
        return False
    try:
        datetime.fromisoformat(text)
    except ValueError:  # out of range: a 13th month
        return False
    return True


def _reject(path: Path, row: object, lineno: int) -> None:
    """Raise the ImportFailure that says why ``row`` is not a label export row."""
    where = f"line {lineno}"
    row = require(path, row, _REQUIRED, where)
    raise ImportFailure(str(path), f"not a mast label export row (format {row.get('format')!r})", where)


def _refuse_version(path: Path, version: object, lineno: int) -> None:
    """Refuse an export row of another schema version: a newer release's fields may mean
    something else, so they are never read as if they were this release's."""
    newer = isinstance(version, int) and version > SCHEMA_VERSION
    raise ImportFailure(
        str(path),
        f"label export of schema version {version!r}"
        + (" (written by a newer release)" if newer else " (no such version)")
        + f"; this release reads schema version {SCHEMA_VERSION}" + (": upgrade mast-annotator to import it" if newer else ""),
        f"line {lineno}",
    )


class MastExport(Importer):
    name = "mast_export"
    description = "labels exported by `mast export --format jsonl` (restores the same labels)"

    def sniff(self, head: Head) -> bool:
        if head.kind == "jsonl":
            first = head.lines[0] if head.lines else None
            return isinstance(first, dict) and first.get("format") == LABEL_EXPORT_FORMAT
        return head.kind == "json" and head.root == "object" and head.scalars.get("format") == LABEL_EXPORT_FORMAT

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        """One record per run of consecutive rows of a trajectory (an export lists each
        trajectory's rows together), so memory holds one trajectory at a time."""
        skipped: list[int] = []
        opts.extra["skipped_lines"] = skipped
        current: ImportedRecord | None = None
        for lineno, row in iter_jsonl(path, opts, skipped, typed=_written):
            if type(row) is Written:
                tid, label = row.trajectory_id, _written_label(row)
            else:  # not as `mast export` writes it: checked field by field
                if not isinstance(row, dict) or row.get("format") != LABEL_EXPORT_FORMAT or not _REQUIRED_KEYS <= row.keys():
                    _reject(path, row, lineno)
                if row.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
                    _refuse_version(path, row["schema_version"], lineno)
                tid, label = row["trajectory_id"], None
            try:
                if current is None or current.trajectory.id != tid:
                    stub = {k: getattr(row, k) for k in _STUB_FIELDS} if type(row) is Written else row
                    done, current = current, _stub(stub, path, opts)
                    if done is not None:
                        done.ledger.mapped(len(done.label_rows))
                        yield done
                current.label_rows.append(label or _stored_label(row))  # the row is a label: counted as mapped below
            except ValidationError as exc:
                raise invalid_value(path, exc, f"line {lineno}") from exc
        if current is not None:
            current.ledger.mapped(len(current.label_rows))
            yield current
