"""Our own label export (``mast export --format jsonl``), read back into a database.

Every line is one verdict of one source on one mode of one trajectory, tagged
``"format": "mast-labels"`` (that tag is what detection looks for, so no other format can be
mistaken for it). The trajectories themselves are not in an export: each becomes a stub with
the exported id, system, model, benchmark, outcome and title, and the original's number of
steps (so onsets keep their place; the store shows placeholder steps for it). A stub never
replaces a trajectory already in the database, and importing the real trajectory later
replaces the stub and keeps the labels. Stubs carry no steps, so no content hash is computed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, invalid_value
from annotator.importers.detect import Head
from annotator.importers.reading import iter_jsonl, require
from annotator.models import LABEL_EXPORT_FORMAT, SCHEMA_VERSION, Label, Trajectory
from annotator.store.report_tables import LABEL_FIELDS
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
        for lineno, row in iter_jsonl(path, opts, skipped):
            # The checks of every row are inlined: a large export has hundreds of thousands.
            if not isinstance(row, dict) or row.get("format") != LABEL_EXPORT_FORMAT or not _REQUIRED_KEYS <= row.keys():
                _reject(path, row, lineno)
            if row.get("schema_version", SCHEMA_VERSION) != SCHEMA_VERSION:
                _refuse_version(path, row["schema_version"], lineno)
            try:
                if current is None or current.trajectory.id != row["trajectory_id"]:
                    done, current = current, _stub(row, path, opts)
                    if done is not None:
                        yield done
                current.labels.append(_label(row))
                current.ledger.mapped()  # the row is a label
            except ValidationError as exc:
                raise invalid_value(path, exc, f"line {lineno}") from exc
        if current is not None:
            yield current
