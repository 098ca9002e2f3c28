"""Importing files into the store: path expansion, detection, each file whole or not at all, a summary.

A file is imported whole or not at all: its records are streamed into the store in short
transactions, unseen until the last record is in, then published at once (``store.staging``);
on the first error what the file wrote is discarded, so a bad record never leaves half a file
behind, while the other files of the same command still import. Writing in short
transactions is what lets annotators tag while a large file imports: their writes wait for a
fraction of a second, not for the file.
"""

from __future__ import annotations

import glob
import hashlib
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING

import orjson

from annotator.errors import AnnotatorError, ImportFailure, StoreError, UnknownFormat, first_line
from annotator.heap import older_objects_frozen
from annotator.importers.accounting import Ledger, check
from annotator.importers.base import (
    ImportedRecord,
    Importer,
    ImportOptions,
    StreamedRecord,
    record_values,
    source_labels_hash,
)
from annotator.importers.detect import Head, read_head, unsupported
from annotator.importers.registry import detect, dir_importer, registry
from annotator.importers.streaming import stage_streamed
from annotator.models import Attribution
from annotator.store import sources, staging
from annotator.store.db import HOLD_S
from annotator.store.step_index import IndexedBatches
from annotator.store.label_merge import new_or_changed
from annotator.store.trajectories import save_stubs

if TYPE_CHECKING:
    from sqlite_utils import Database

#: Files never taken from a folder walk: documentation and licences beside the data.
_SKIP_NAMES = {"sources.md", "readme.md", "license", "license.md", "license.txt", "notice"}


@dataclass
class FileResult:
    """What happened to one file."""

    path: str
    format: str | None = None
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    labels: int = 0
    error: str | None = None
    skipped: str | None = None  # why a file found by a folder walk was not imported
    #: What a file a folder walk found looks like when it seems a trajectory no importer reads.
    unsupported: str | None = None
    #: The accounting of the trajectories this import wrote (imported or updated): an unchanged
    #: trajectory's was reported when it was written.
    ledger: Ledger = field(default_factory=Ledger)
    skipped_lines: list[int] = field(default_factory=list)
    trajectory_ids: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def warnings(self) -> list[str]:
        """The written trajectories' warnings as lines."""
        return self.ledger.warning_lines()


#: Why a walked file no importer recognises is skipped; every other skip is a file another takes in.
NOT_A_TRAJECTORY = "not a trajectory"
PART_OF_ANOTHER = "part of another file"


@dataclass
class ImportSummary:
    """Totals over all files of one import command."""

    files: list[FileResult] = field(default_factory=list)

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if not f.ok]

    def total(self, attr: str) -> int:
        return sum(getattr(f, attr) for f in self.files)

    def skipped(self) -> list[tuple[str, int]]:
        """How many files were skipped, by reason: not a trajectory, or part of another file
        (each of those names the file that takes it in; the summary counts them together)."""
        reasons = Counter(NOT_A_TRAJECTORY if f.skipped == NOT_A_TRAJECTORY else PART_OF_ANOTHER
                          for f in self.files if f.skipped)
        return sorted(reasons.items(), reverse=True)


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named, found in folders (recursively) or matched by glob patterns, sorted, no repeats.

    A run folder that an importer reads as a whole (see ``Importer.claims_dir``) is one path.
    """
    return [p for p, _ in plan_imports(paths)]


def plan_imports(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """(path, whether a folder walk found it) for every path to import, as ``expand_paths`` orders them;
    walked once, so a caller that shows progress can count the files and then import them."""
    out: list[tuple[Path, bool]] = []
    for p in paths:
        p = Path(p)
        if p.is_dir() and not _unit(p):
            out.extend((f, True) for f in _walk(p))
        elif not p.exists() and any(ch in str(p) for ch in "*?["):
            out.extend(sorted((Path(m), False) for m in glob.glob(str(p), recursive=True) if Path(m).is_file()))
        else:
            out.append((p, False))
    seen: set[Path] = set()
    unique = []
    for f, walked in out:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append((f, walked))
    return unique


def _walk(root: Path) -> list[Path]:
    """Files under ``root`` and the run folders in it read as units (never also file by file)."""
    units: list[Path] = []
    files: list[Path] = []
    for f in sorted(root.rglob("*")):
        if any(u in f.parents for u in units):
            continue
        if f.is_dir():
            if _unit(f):
                units.append(f)
        elif f.is_file() and _wanted(f):
            files.append(f)
    return sorted(units + files)


def _unit(folder: Path) -> bool:
    """Whether a folder is imported as one unit: a run folder, or one that cannot be read (its
    import then reports the error in one line, and the walk goes on with the rest)."""
    try:
        return dir_importer(folder) is not None
    except OSError:
        return True


#: Database files (a folder may hold the very database being imported into).
_SKIP_SUFFIXES = (".db", ".db-wal", ".db-shm", ".db-journal", ".sqlite", ".sqlite3")


def _wanted(f: Path) -> bool:
    name = f.name.lower()
    return not name.startswith(".") and not name.endswith(_SKIP_SUFFIXES)


#: Labels of stubs gathered before they are written together, in one transaction of a fraction
#: of a second (a label export's trajectories carry 14 labels per source each: a few thousand
#: trajectories a batch). Each commit writes the index pages its labels touched, so fewer,
#: larger batches write them fewer times.
STUB_BATCH_LABELS = 50_000


def import_file(
    db: Database, path: Path, fmt: str | None = None, opts: ImportOptions | None = None, walked: bool = False
) -> FileResult:
    """Import one file (or run folder) atomically: what is wrong with the file is captured in the
    result, never half-written; trouble with the database itself (StoreError, SQLite's errors)
    is raised, since no other file would import either. A file a folder walk found that no
    importer recognises is skipped, not failed."""
    opts = opts or ImportOptions()
    result = FileResult(path=str(path))
    head: Head | None = None
    misfit = False  # a forced --format the file does not look like
    if walked and path.name.lower() in _SKIP_NAMES:
        result.skipped = NOT_A_TRAJECTORY
        return result
    try:
        if not path.exists():
            raise ImportFailure(str(path), "no such file")
        if path.is_dir():
            try:
                importer = dir_importer(path)
            except OSError as exc:
                raise ImportFailure(str(path), f"cannot read the folder: {exc.strerror or exc}") from exc
            if importer is None:
                raise UnknownFormat(str(path), "a folder that is not a run folder (name a file, or the folder to walk)")
        elif fmt is not None:
            importers = registry()
            if fmt not in importers:
                raise ImportFailure(str(path), f"unknown --format {fmt!r}; choose from {', '.join(importers)}")
            head = read_head(path, opts)  # size, emptiness and encoding checks still apply
            importer = importers[fmt]
            misfit = not importer.sniff(head)
        else:
            head = read_head(path, opts)
            importer = detect(path, opts, head)
        result.format = importer.name
        result.skipped = importer.skip_reason(path, walked)
        if result.skipped:
            return result
        source = _Source.of(path, importer, opts)
        if source is not None and (ids := source.unchanged(db)) is not None:
            result.unchanged, result.trajectory_ids = len(ids), ids
            return result
        try:
            _read_into(db, path, importer, opts, result, source)
        except ImportFailure as exc:
            if not misfit or isinstance(exc, UnknownFormat):
                raise
            raise ImportFailure(str(path), f"not {importer.name} input: {importer.mismatch(head)}"
                                           f" (reading it as one: {exc.reason})") from exc
    except StoreError:
        raise  # the database itself is in trouble: no other file would import either
    except UnknownFormat as exc:
        if walked:
            result.unsupported = unsupported(head) if head is not None else None
            result.skipped = None if result.unsupported else NOT_A_TRAJECTORY
        else:
            result.error = str(exc)
    except AnnotatorError as exc:
        result.error = str(exc)
        _nothing_written(result)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        result.error = f"{path}: {first_line(exc)}"
        _nothing_written(result)
    return result


@dataclass
class _Source:
    """A file read whole by a self-contained importer, by content: what ``store.sources`` keys
    its record by, so that an unchanged re-import is answered without parsing it."""

    path: str
    importer: str
    options: str
    sha256: str

    @classmethod
    def of(cls, path: Path, importer: Importer, opts: ImportOptions) -> _Source | None:
        if not importer.self_contained or opts.ground_truth is not None or not path.is_file():
            return None
        shaping = {k: getattr(opts, k) for k in ("system", "model", "benchmark", "skip_bad_lines", "strict")}
        with path.open("rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
        return cls(str(path.resolve()), importer.name, orjson.dumps(shaping).decode(), digest)

    def unchanged(self, db: Database) -> list[str] | None:
        return sources.unchanged_ids(db, self.path, self.importer, self.options, self.sha256)

    def recorder(self, db: Database, result: FileResult, hashes: dict[str, str]) -> Callable[[], None] | None:
        """What publishing writes to remember the file; None when a re-import must read it again
        (it held label-export stubs, whose labels merge each time, or lines it skipped)."""
        if len(hashes) != len(set(result.trajectory_ids)) or result.skipped_lines:
            return None
        return lambda: sources.record_source(db, self.path, self.importer, self.options, self.sha256, hashes)


def _read_into(db: Database, path: Path, importer: Importer, opts: ImportOptions, result: FileResult,
               source: _Source | None = None) -> None:
    """Stream the file's records in unseen, then publish them at once; on an error, discard them."""
    token = staging.start(db, str(path))
    try:
        # Reading a file allocates millions of containers (a label export's lines are dicts
        # holding a list and a dict): full collections over the rest of the process took 1.7 s
        # of the 20 s CPU of importing a 566,272-line label export.
        with older_objects_frozen():
            _stage_file(db, path, importer, opts, result, token, source)
    except BaseException:
        _discard(db, token)
        raise


def _nothing_written(result: FileResult) -> None:
    """Clear the counts of a file whose staged rows were discarded."""
    result.imported = result.updated = result.unchanged = result.labels = 0
    result.trajectory_ids = []
    result.ledger = Ledger()


def _strict_failure(path: Path, rec: ImportedRecord) -> ImportFailure:
    """The failure of a file that ``--strict`` refuses: its first warning and how many there are."""
    (kind, message), _ = next(iter(rec.ledger.warnings.items()))
    n = sum(rec.ledger.warnings.values())
    more = f" (and {n - 1} more)" if n > 1 else ""
    return ImportFailure(str(path), f"--strict: {kind}: {message}{more}", where=rec.trajectory.source_ref)


#: Parsed records are written together once this many seconds of parsing, or this many steps,
#: have gathered: one short transaction for many small records (a commit per record cost more
#: than the writing: each flushes the full-text index's pending terms as a new segment), and
#: parsing never holds the write lock.
GATHER_S = HOLD_S
GATHER_STEPS = 20_000


def _stage_file(db: Database, path: Path, importer: Importer, opts: ImportOptions, result: FileResult,
                token: str, source: _Source | None) -> None:
    """Write the file's records unseen in short transactions, then publish them at once."""
    staged = _Staged(db, token, result)
    with IndexedBatches(db) as batches, record_values(path):
        batches.commit()  # no lock until there is something to write
        gathered: list[ImportedRecord] = []
        n_steps, since = 0, monotonic()
        for rec in importer.read(path, opts):
            if isinstance(rec, StreamedRecord):
                staged.write(gathered, batches)
                batches.begin()
                rec, status, shadow = stage_streamed(db, rec, token, importer.name, batches)
                if opts.strict and rec.ledger.warnings:  # its checks ran as its steps were written
                    raise _strict_failure(path, rec)
                staged.count(rec, status, shadow)
                batches.commit()
                n_steps, since = 0, monotonic()
                continue
            if not rec.stub:
                check(rec.trajectory, rec.ledger)
            if opts.strict and rec.ledger.warnings:
                raise _strict_failure(path, rec)
            gathered.append(rec)
            n_steps += len(rec.trajectory.steps)
            if n_steps >= GATHER_STEPS or monotonic() - since >= GATHER_S:
                staged.write(gathered, batches)
                n_steps, since = 0, monotonic()
        staged.write(gathered, batches)
        batches.begin()
        staged.merge_stubs()
        result.skipped_lines = list(opts.extra.get("skipped_lines", []))
    record = source.recorder(db, result, staged.hashes) if source is not None else None
    staging.publish(db, token, list(staged.replaced.items()), staged.attributions, record)


class _Staged:
    """What one file's import has staged so far, and the writing of its gathered records."""

    def __init__(self, db: Database, token: str, result: FileResult) -> None:
        self.db, self.token, self.result = db, token, result
        self.replaced: dict[str, str] = {}  # shadow id: the id of the changed trajectory it replaces
        self.attributions: list[Attribution] = []
        self.stubs: list[ImportedRecord] = []
        self.held = 0  # labels in ``stubs``
        self.hashes: dict[str, str] = {}  # id: content hash of each trajectory staged whole
        self.status: dict[str, str] = {}  # id: what publishing makes of each trajectory staged whole

    def write(self, gathered: list[ImportedRecord], batches: IndexedBatches) -> None:
        """Stage ``gathered`` (emptied) in order, in one transaction unless it takes longer than
        ``HOLD_S``; committed before the next records are parsed."""
        if not gathered:
            return
        batches.begin()
        for rec in gathered:
            if rec.stub:
                self.stubs.append(rec)
                self.held += len(rec.label_rows)
                if self.held >= STUB_BATCH_LABELS:
                    self.merge_stubs()
            else:
                self.merge_stubs()
                rec.trajectory.content_hash = source_labels_hash(rec)
                status, shadow = staging.stage_trajectory(self.db, rec.trajectory, self.token, batches)
                self.count(rec, status, shadow)
                batches.point()
        gathered.clear()
        batches.commit()

    def count(self, rec: ImportedRecord, status: str, shadow: str | None) -> None:
        """Note a staged trajectory in the file's result; stage its labels unless it was unchanged.

        A file that gives an id twice is one trajectory, the later record's (staging replaced
        the earlier one's steps): it is counted once, as what publishing makes of it, and the
        earlier record's labels and attributions are withdrawn, with a warning that says so."""
        tid = rec.trajectory.id
        if shadow is not None:
            self.replaced[shadow] = tid
        self.hashes[tid] = rec.trajectory.content_hash
        earlier = self.status.get(tid)
        if earlier is None:
            self.result.trajectory_ids.append(tid)
        else:
            setattr(self.result, earlier, getattr(self.result, earlier) - 1)
            status = "imported" if earlier == "imported" else status
            if earlier != "unchanged":
                self.result.labels -= staging.unstage_labels(self.db, self.token, tid)
                self.attributions = [a for a in self.attributions if a.trajectory_id != tid]
            rec.ledger.warn("duplicate_id", "a trajectory id the file gives again: the later record is kept")
        self.status[tid] = status
        setattr(self.result, status, getattr(self.result, status) + 1)
        if status != "unchanged":
            self.result.ledger.merge(rec.ledger)
            unseen = {tid} if shadow is None else set()  # a new trajectory, or one this file gave before
            self.result.labels += staging.stage_labels(self.db, rec.labels, unseen)
            self.attributions.extend(rec.attributions)

    def merge_stubs(self) -> None:
        """Stage the placeholder trajectories whose ids are new, and those of their labels not
        already current. Many at once (a label export has tens of thousands); ``stubs`` is emptied."""
        stubs, result = self.stubs, self.result
        self.held = 0
        if not stubs:
            return
        saved = save_stubs(self.db, [(r.trajectory, r.stub_steps) for r in stubs], pending=self.token)
        unseen = set()  # the ids of stubs new to the store: written unseen
        for rec, status in zip(stubs, saved, strict=True):
            result.trajectory_ids.append(rec.trajectory.id)
            setattr(result, status, getattr(result, status) + 1)
            if status != "unchanged":
                result.ledger.merge(rec.ledger)
                unseen.add(rec.trajectory.id)
        rows = new_or_changed(self.db, [row for rec in stubs for row in rec.label_rows])
        result.labels += staging.stage_label_rows(self.db, rows, unseen)
        stubs.clear()


def _discard(db: Database, token: str) -> None:
    """Remove what a failed file staged. Should that fail too (the database is read-only, full or
    damaged), the rows stay unseen, and the next import discards them once this process is gone."""
    try:
        staging.discard(db, token)
    except (AnnotatorError, sqlite3.Error):
        return


def import_paths(
    db: Database,
    paths: Iterable[str | Path],
    fmt: str | None = None,
    opts: ImportOptions | None = None,
    progress: Callable[[FileResult], None] | None = None,
) -> ImportSummary:
    """Import every file the paths name; one result per file, in order."""
    return import_planned(db, plan_imports(paths), fmt, opts, progress)


def import_planned(
    db: Database,
    plan: Iterable[tuple[Path, bool]],
    fmt: str | None = None,
    opts: ImportOptions | None = None,
    progress: Callable[[FileResult], None] | None = None,
) -> ImportSummary:
    """Import the files of a :func:`plan_imports` plan; one result per file, in order."""
    summary = ImportSummary()
    staging.discard_abandoned(db)
    # What importers derive from the options alone (a parsed ground-truth folder), shared by the
    # files of this import so it is worked out once; each file still gets its own ``extra``.
    shared: dict = {}
    for path, walked in plan:
        file_opts = ImportOptions(**{**(opts or ImportOptions()).__dict__, "extra": {"shared": shared}})
        result = import_file(db, path, fmt, file_opts, walked=walked)
        summary.files.append(result)
        if progress:
            progress(result)
    return summary
