"""Plain-text agent logs (``.log``/``.txt``): the catch-all for runs that left only a console log.

The system is the ``--system`` override, else the one whose markers the log carries
(:func:`~annotator.importers.log_splitters.guess_system`); its splitter cuts the text into steps,
else blank-line blocks do. A trailing evaluation block (``{"success": ...}``) gives the
outcome and is kept out of the steps. The whole text is kept as the raw original.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.importers.base import ImportedRecord, Importer, ImportOptions, finish, record_values, stable_id
from annotator.importers.detect import Head, decode_utf8
from annotator.importers.mad import log_steps, outcome_of
from annotator.importers.log_splitters import guess_system, log_facts
from annotator.models import HIDDEN, Trajectory


#: File name endings that only console logs use. A ``.txt`` file or one without a suffix may be
#: anything (a README, a LICENSE, a codebook), so it is a log only if it carries a system's
#: markers, or if the user says so with ``--format text_log``.
LOG_SUFFIXES = {".log", ".out"}

#: Lines at the start of a text file in which a system's markers must appear for it to be taken
#: as that system's log: a log opens with them, while a paper or codebook may quote a log further on.
LEAD_LINES = 5


class TextLog(Importer):
    name = "text_log"
    description = "Plain-text agent logs (ChatDev, MetaGPT, AG2, AppWorld, HyperAgent, Magentic-One, OpenManus, other)"
    fallback = True

    def sniff(self, head: Head) -> bool:
        # Any text file could be a log: take those named like one, or carrying a system's markers,
        # so that a folder's README, LICENSE or code files are not imported as trajectories.
        if head.kind != "text":
            return False
        if head.path.suffix.lower() in LOG_SUFFIXES:
            return True
        return guess_system("\n".join(head.text.splitlines()[:LEAD_LINES])) is not None

    def read(self, path: Path, opts: ImportOptions) -> Iterator[ImportedRecord]:
        raw = path.read_bytes()
        text = decode_utf8(path, raw).removeprefix("\ufeff")
        if "\x00" in text:
            raise ImportFailure(str(path), "binary file (contains NUL bytes), not a trajectory")
        if not text.strip():
            raise ImportFailure(str(path), "empty file")
        system = opts.system or guess_system(text)
        hidden: dict = {}
        with record_values(path):
            steps = log_steps(text, system, hidden)
            meta: dict = {HIDDEN: hidden} if hidden else {}
            traj = finish(Trajectory(
                id=stable_id(self.name, path.name), source_format=self.name, source_path=str(path),
                title=path.stem, system=system, outcome=outcome_of(hidden), metadata=meta, raw=raw,
                **log_facts(text, system),
                steps=steps,
            ), opts)
            ledger = Ledger()
            ledger.mapped(len(steps))
            for reason, n in steps.dropped.items():
                ledger.dropped(reason, n)
            item = ImportedRecord(trajectory=traj, ledger=ledger)
        yield item
