"""Our own label export (``mast export --format jsonl``), read back into a database.

Every line is one verdict of one source on one mode of one trajectory, tagged
``"format": "mast-labels"`` (that tag is what detection looks for, so no other format can be
mistaken for it). The trajectories themselves are not in an export: each becomes a stub with
the exported id, system, model, benchmark, outcome and title, and as many placeholder steps as
the original had (so onsets keep their place). A stub never replaces a trajectory already in
the database, and importing the real trajectory later replaces the stub and keeps the labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from annotator.errors import ImportFailure
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, finish, record_values, register
from annotator.importers.detect import Head
from annotator.importers.reading import iter_jsonl, require
from annotator.models import Label, Step, Trajectory

FORMAT_TAG = "mast-labels"
#: Content hash of a stub: never equal to a real trajectory's, so the real import replaces it.
STUB_HASH = "label-export-stub"
PLACEHOLDER = "(step not included in the label export)"

_REQUIRED = ("trajectory_id", "source", "mode_id", "verdict", "provenance")
_LABEL_FIELDS = ("onset_step", "evidence_steps", "quote", "note", "rationale", "confidence", "run_id", "grounded",
                 "taxonomy_hash", "extra", "created_at")


def _stub(row: dict, path: Path) -> Trajectory:
    n_steps = int(row.get("n_steps") or 0)
    return Trajectory(
        id=row["trajectory_id"], source_format=MastExport.name, source_path=str(path), title=row.get("title"),
        system=row.get("system"), model=row.get("model"), benchmark=row.get("benchmark"),
        outcome=row.get("outcome") or "unknown", metadata={"label_export_stub": True},
        steps=[Step(index=i, kind="event", content=PLACEHOLDER) for i in range(n_steps)],
    )


def _label(row: dict) -> Label:
    values = {k: row[k] for k in _LABEL_FIELDS if row.get(k) is not None}
    return Label(trajectory_id=row["trajectory_id"], mode_id=row["mode_id"], annotator=row["source"],
                 verdict=row["verdict"], provenance=row["provenance"], **values)


@register
class MastExport(Importer):
    name = "mast_export"
    description = "labels exported by `mast export --format jsonl` (restores the same labels)"

    def sniff(self, head: Head) -> bool:
        if head.kind == "jsonl":
            first = head.lines[0] if head.lines else None
            return isinstance(first, dict) and first.get("format") == FORMAT_TAG
        return head.kind == "json" and head.root == "object" and head.scalars.get("format") == FORMAT_TAG

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        """One record per run of consecutive rows of a trajectory (an export lists each
        trajectory's rows together), so memory holds one trajectory at a time."""
        skipped: list[int] = []
        opts.extra["skipped_lines"] = skipped
        current: tuple[Trajectory, list[Label]] | None = None
        for lineno, row in iter_jsonl(path, opts, skipped):
            where = f"line {lineno}"
            row = require(path, row, _REQUIRED, where)
            if row.get("format") != FORMAT_TAG:
                raise ImportFailure(str(path), f"not a mast label export row (format {row.get('format')!r})", where)
            with record_values(path, where):
                if current is None or current[0].id != row["trajectory_id"]:
                    if current is not None:
                        yield _record(*current, opts)
                    current = (_stub(row, path), [])
                current[1].append(_label(row))
        if current is not None:
            yield _record(*current, opts)


def _record(traj: Trajectory, labels: list[Label], opts: ImportOptions) -> ImportedRecord:
    stub = finish(traj, opts)
    stub.content_hash = STUB_HASH
    return ImportedRecord(trajectory=stub, labels=labels, stub=True)
