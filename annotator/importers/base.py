"""What every importer shares: the record it yields, options, ids and hashes.

An importer is a module with an :class:`Importer` subclass, listed in
:mod:`annotator.importers.registry`. It sniffs a :class:`~annotator.importers.detect.Head` (a
bounded look at the file) and reads the file as a stream of :class:`ImportedRecord` s, raising
:class:`~annotator.errors.ImportFailure` with the line or record where it stopped.
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import orjson
from pydantic import ValidationError

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.media import media_text
from annotator.models import Attribution, Label, Step, Trajectory

if TYPE_CHECKING:
    from annotator.importers.detect import Head

#: Files larger than this are refused (override with ImportOptions.max_bytes).
DEFAULT_MAX_BYTES = 2 * 1024**3


@dataclass
class ImportOptions:
    """What the user asked for on the command line."""

    system: str | None = None
    model: str | None = None
    benchmark: str | None = None
    skip_bad_lines: bool = False
    #: Any accounting warning fails the file (nothing of it is written).
    strict: bool = False
    max_bytes: int = DEFAULT_MAX_BYTES
    #: Folder of ground-truth files that importers able to score a run use for its outcome.
    ground_truth: Path | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class ImportedRecord:
    """One trajectory read from a file, with the labels and attributions the file carries."""

    trajectory: Trajectory
    labels: list[Label] = field(default_factory=list)
    attributions: list[Attribution] = field(default_factory=list)
    #: What became of each raw record of the file read for this trajectory, and the warnings.
    ledger: Ledger = field(default_factory=Ledger)
    #: The trajectory is only a placeholder for its labels (a label export): it is saved only
    #: when its id is new, and its labels are merged whether or not it was.
    stub: bool = False
    #: A stub's number of steps in the original (a stub stores no steps).
    stub_steps: int = 0
    #: A stub's labels in stored form (``store.labels.label_row``, checked by the importer),
    #: bound (``store.binding``: a None as a NaN): a label export's hundreds of thousands of
    #: rows are never model objects, and are bound as they are read, a block at a time.
    label_rows: list[tuple] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """The ledger's warnings as lines."""
        return self.ledger.warning_lines()


class Importer:
    """Base class of the format readers. Subclasses set ``name`` and implement both methods."""

    #: Registry key and the value of ``--format``.
    name: ClassVar[str]
    #: One line for ``mast import --help`` and the README.
    description: ClassVar[str]
    #: A catch-all reader (plain text, bare chat lists) that yields to any specific match.
    fallback: ClassVar[bool] = False
    #: Everything it reads of a file is in the file's bytes (no sibling files, no folder): an
    #: unchanged re-import of the same bytes is then answered without reading them (``store.sources``).
    self_contained: ClassVar[bool] = False

    def sniff(self, head: Head) -> bool:
        """Whether this importer recognises the file from its head alone."""
        raise NotImplementedError

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        """Yield the file's trajectories one by one; raise ImportFailure on bad input."""
        raise NotImplementedError

    def mismatch(self, head: Head) -> str:
        """Why a file this importer was forced on (``--format``) and does not recognise is not
        of its format, in the format's terms: what it expects and what the file is. Importers
        whose shape a description does not say override it."""
        return f"expected {self.description}; found {head.describe()}"

    def claims_dir(self, path: Path) -> bool:
        """Whether this importer reads the folder ``path`` as one unit (a run folder)."""
        return False

    def skip_reason(self, path: Path, walked: bool) -> str | None:
        """Why ``path``, a file of this format, is not imported on its own (another file's import
        takes it in), or None. ``walked``: a folder walk found it rather than the user naming it."""
        return None


def stable_id(*parts: object) -> str:
    """A short id derived from the source identity, so a re-import finds the same trajectory."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return digest[:16]


#: The step fields that make up its content (``raw`` is the source's and left out), read at once.
_STEP_FIELDS = operator.attrgetter(*(f for f in Step.model_fields if f != "raw"))


class ContentHash:
    """Hash of everything a re-import could change, fed a step at a time: the steps in order,
    then (:meth:`hexdigest`) the trajectory's metadata and outcome. Steps come first so that a
    trajectory streamed from a file too big to hold is hashed as its steps go by, before the
    metadata that may follow them in the file is known."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def add(self, step: Step) -> None:
        # The field values straight from the model: model_dump per step costs more than the hash.
        self._h.update(orjson.dumps(_STEP_FIELDS(step), option=orjson.OPT_SORT_KEYS, default=str))

    def hexdigest(self, traj: Trajectory) -> str:
        head = traj.model_dump(mode="json", exclude={"steps", "raw", "imported_at", "content_hash", "source_path"})
        h = self._h.copy()
        h.update(orjson.dumps(head, option=orjson.OPT_SORT_KEYS, default=str))
        return h.hexdigest()


def content_hash(traj: Trajectory) -> str:
    """Hash of everything a re-import could change: metadata, outcome and every step's content."""
    h = ContentHash()
    for s in traj.steps:
        h.add(s)
    return h.hexdigest(traj)


def source_labels_hash(rec: ImportedRecord) -> str:
    """The trajectory's content hash extended by the labels and attributions its file carries.

    A dataset can correct its labels without touching the trace (a MAD annotation fixed): the
    re-import must then count as "updated" and append the new labels, not "unchanged".
    """
    if not rec.labels and not rec.attributions:
        return rec.trajectory.content_hash
    h = hashlib.sha256(rec.trajectory.content_hash.encode())
    for label in rec.labels:
        h.update(orjson.dumps([label.mode_id, label.annotator, label.verdict, label.onset_step, label.extra],
                              option=orjson.OPT_SORT_KEYS, default=str))
    for att in rec.attributions:
        h.update(orjson.dumps([att.annotator, att.step, att.step_as_given, att.agent, att.reason],
                              default=str))
    return h.hexdigest()


def finish(traj: Trajectory, opts: ImportOptions) -> Trajectory:
    """Apply the user's overrides, link tool calls with their results and compute the hash."""
    traj = overridden(traj, opts)
    link_tool_steps(traj.steps)
    traj.content_hash = content_hash(traj)
    return traj


def overridden(traj: Trajectory, opts: ImportOptions) -> Trajectory:
    """``traj`` with the system, model and benchmark the user named on the command line."""
    updates = {key: getattr(opts, key) for key in ("system", "model", "benchmark") if getattr(opts, key) is not None}
    return traj.model_copy(update=updates) if updates else traj


class ToolLinks:
    """Links each tool call with its result by ``call_id`` as the steps go by, in replay order:
    a result points at the first earlier call of its id and takes the call's tool name if it
    names none; the call points back at its first result. A call may be gone by then (written
    to the store a chunk earlier): its back link waits in :attr:`late` as (call, result) indexes."""

    def __init__(self) -> None:
        self._calls: dict[str, list] = {}  # call_id: [index, tool_name, linked]
        self.late: list[tuple[int, int]] = []

    def see(self, s: Step) -> None:
        if s.call_id is None:
            return
        if s.kind == "tool_call":
            self._calls.setdefault(s.call_id, [s.index, s.tool_name, s.link is not None])
        elif s.kind in ("tool_result", "observation") and s.call_id in self._calls:
            call = self._calls[s.call_id]
            if s.link is None:
                s.link = call[0]
            if not call[2]:
                call[2] = True
                self.late.append((call[0], s.index))
            if s.tool_name is None:
                s.tool_name = call[1]


def first_request(steps: Iterable[Step]) -> str | None:
    """The content of the first user message: the task of a run whose format names none apart."""
    return next((s.content for s in steps if s.role == "user" and s.kind == "message"), None)


def link_tool_steps(steps: list[Step]) -> None:
    """Point each tool call at its result and back, by ``call_id``, where not already linked;
    a result that does not name its tool takes the name from its call."""
    links = ToolLinks()
    for s in steps:
        links.see(s)
    by_index = {s.index: s for s in steps} if links.late else {}
    for call, result in links.late:
        by_index[call].link = result


@dataclass
class StreamedRecord:
    """One trajectory too big to hold whole (a 200 MB single chat, a million steps): its steps
    are written to the store as they are parsed, and the rest of it is known after them.

    ``steps`` yields the steps in replay order, numbered, not yet linked (the store links and
    hashes them as they pass); once it is exhausted, ``rest()`` gives the record: trajectory
    without steps or raw bytes (the user's overrides applied), labels, ledger. The raw copy is
    the bytes of ``raw_file``, compressed as they are read.
    """

    steps: Iterator[Step]
    rest: Callable[[], ImportedRecord]
    raw_file: Path


def as_text(value: object) -> str:
    """Render a content value of any shape as display text (lists of parts, dicts, None)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return "\n".join(value)
        parts = []
        for v in value:
            if isinstance(v, dict) and isinstance(v.get("text"), str):
                parts.append(v["text"])
            else:
                parts.append(media_text(v) or as_text(v))  # an image part is a placeholder, not its base64
        return "\n".join(parts)
    return orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()


@contextmanager
def record_values(path: Path, where: str | None = None) -> Iterator[None]:
    """Turn a model validation error (a value of the wrong type in the file) into an ImportFailure."""
    try:
        yield
    except ValidationError as exc:
        raise invalid_value(path, exc, where) from exc


def one_record(path: Path, build: Callable[[], ImportedRecord]) -> Iterator[ImportedRecord]:
    """The one record of a file that holds one trajectory, built by ``build``; a value of the
    wrong type in the file is an ImportFailure (see :func:`record_values`)."""
    with record_values(path):
        item = build()
    yield item


def invalid_value(path: Path, exc: ValidationError, where: str | None = None) -> ImportFailure:
    """The ImportFailure naming the first field a model validation refused."""
    first = exc.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "value"
    return ImportFailure(str(path), f"invalid {loc}: {first['msg']}", where=where)
