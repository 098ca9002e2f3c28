"""Our own label export (``mast export --format jsonl``), read back into a database.

Every line is one verdict of one source on one mode of one trajectory, tagged
``"format": "mast-labels"`` (that tag is what detection looks for, so no other format can be
mistaken for it). The trajectories themselves are not in an export: each becomes a stub with
the exported id, system, model, benchmark, outcome and title, and the original's number of
steps (so onsets keep their place; the store shows placeholder steps for it). A stub never
replaces a trajectory already in the database, and importing the real trajectory later
replaces the stub and keeps the labels. Stubs carry no steps, so no content hash is computed.

An export has hundreds of thousands of lines, so a block of rows whose every field already has
the type and form the store keeps (what ``mast export`` writes) goes straight into its stored
form, checked a column at a time, its timestamps kept as the text they are; the rows of any
other block are read one by one, through the ``Label`` model where a value needs converting,
which converts what it can and names the field it cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from functools import lru_cache
from itertools import chain, compress, pairwise, product, repeat
from operator import itemgetter, ne
from pathlib import Path
from typing import get_args

from pydantic import ValidationError

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, invalid_value
from annotator.importers.detect import Head
from annotator.importers.reading import jsonl_blocks, require
from annotator.models import LABEL_EXPORT_FORMAT, SCHEMA_VERSION, Label, Provenance, Trajectory, Verdict, utcnow
from annotator.store._json import dumps
from annotator.store.binding import NULL, bound, bound_column
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


#: Every field of a row as ``mast export`` writes it (all of them, nulls included), in this order.
_WRITTEN = itemgetter("format", "schema_version", "trajectory_id", "mode_id", "source", "verdict", "provenance",
                      "onset_step", "evidence_steps", "quote", "note", "rationale", "confidence", "run_id",
                      "grounded", "taxonomy_hash", "extra", "created_at")
_NONE = type(None)
#: The types of those fields in such a row, each combination of them that may come.
_WRITTEN_TYPES = frozenset(product(
    [str], [int], [str], [str], [str], [str], [str], [int, _NONE], [list], [str, _NONE], [str, _NONE],
    [str, _NONE], [float, _NONE], [int, _NONE], [bool, _NONE], [str, _NONE], [dict], [str],
))


_INT = frozenset([int])
#: A row's ``grounded`` in stored form, bound (it is a bool or None).
_GROUNDED = {None: NULL, False: 0, True: 1}.get


def _written_block(rows: list) -> list[tuple] | None:
    """The stored forms, bound (``store.binding``), of a block of rows each exactly as ``mast
    export`` writes it (every key there, each value of its stored type and form), or None if
    any row is not. The block is
    checked a column at a time, by C loops (``map``, ``zip``, set operations): a large export
    has hundreds of thousands of rows, and even one Python function call per row cost more
    than parsing its line. The types of a row's fields are checked at once, as one tuple of
    types looked up in ``_WRITTEN_TYPES``. The stored values are those of
    :func:`_stored_label`'s direct path."""
    try:
        values = list(map(_WRITTEN, rows))
    except (KeyError, TypeError):  # a key missing, or a row that is not an object
        return None
    if not _WRITTEN_TYPES.issuperset(map(tuple, map(map, repeat(type), values))):
        return None
    (fmt, version, tid, mode, source, verdict, provenance, onset, steps, quote, note, rationale, confidence, run_id,
     grounded, taxonomy_hash, extra, created) = zip(*values, strict=True)
    confidences = set(confidence) - {None}
    if (
        set(fmt) != {LABEL_EXPORT_FORMAT} or set(version) != {SCHEMA_VERSION} or not _VERDICTS.issuperset(verdict)
        or not _PROVENANCES.issuperset(provenance) or (confidences and not 0 <= min(confidences) <= max(confidences) <= 1)
        or not _INT.issuperset(map(type, chain.from_iterable(steps))) or not all(map(_canonical_time, set(created)))
    ):
        return None
    return list(zip(
        repeat(SCHEMA_VERSION), tid, mode, source, verdict, bound_column(onset), [dumps(s) if s else "[]" for s in steps],
        bound_column(quote), bound_column(note), bound_column(rationale), bound_column(confidence), provenance,
        bound_column(run_id), map(_GROUNDED, grounded), bound_column(taxonomy_hash), repeat(NULL),
        [dumps(e) if e else "{}" for e in extra], created,
    ))


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
        trajectory's rows together), so memory holds one trajectory at a time (and one block
        of lines)."""
        skipped: list[int] = []
        opts.extra["skipped_lines"] = skipped
        current: ImportedRecord | None = None
        for numbers, rows, labels in _stored_blocks(path, opts, skipped):
            tids = list(map(_TRAJECTORY, rows))
            # Where the trajectory changes: the first row of each run of rows of one trajectory.
            starts = [0, *compress(range(1, len(tids)), map(ne, tids[1:], tids))]
            for start, end in pairwise([*starts, len(tids)]):
                if current is None or current.trajectory.id != tids[start]:
                    if current is not None:
                        current.ledger.mapped(len(current.label_rows))
                        yield current
                    try:
                        current = _stub(rows[start], path, opts)
                    except ValidationError as exc:
                        raise invalid_value(path, exc, f"line {numbers[start]}") from exc
                current.label_rows.extend(labels[start:end])  # the rows are labels: counted as mapped below
        if current is not None:
            current.ledger.mapped(len(current.label_rows))
            yield current


_TRAJECTORY = itemgetter("trajectory_id")


def _stored_blocks(path: Path, opts: ImportOptions, skipped: list[int]) -> Iterator[tuple[Sequence[int], list, list]]:
    """(line numbers, rows, their labels in stored form, bound) of the file, a block at a time
    when all its rows are as ``mast export`` writes them, else a row at a time, each checked
    before the next is read: the first error is the first bad line's, as reading line by line."""
    for numbers, rows in jsonl_blocks(path, opts, skipped):
        labels = _written_block(rows)
        if labels is not None:
            yield numbers, rows, labels
            continue
        for lineno, row in zip(numbers, rows, strict=True):
            yield [lineno], [row], [bound(_checked_label(path, row, lineno))]


def _checked_label(path: Path, row: object, lineno: int) -> tuple:
    """The stored form of a row of a block that is not all as ``mast export`` writes it: an
    ImportFailure naming the line if it is not a label export row of this schema version, or
    a value is invalid."""
    if not isinstance(row, dict) or row.get("format") != LABEL_EXPORT_FORMAT or not _REQUIRED_KEYS <= row.keys():
        _reject(path, row, lineno)
    if row.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
        _refuse_version(path, row["schema_version"], lineno)
    try:
        return _stored_label(row)
    except ValidationError as exc:
        raise invalid_value(path, exc, f"line {lineno}") from exc
