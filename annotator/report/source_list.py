"""Every label source in a database, with how far each got: what ``mast sources`` lists.

A source is any name labels stand under (people, runs, imported sets) plus ``consensus`` when
two or more people have finished trajectories (a majority of one person is that person). For
each: its kind, how many trajectories it finished (by the rule of its kind, the same rule a
report counts by), the modes it covers and when it was last active. A report without
``--source`` uses the only source there is and otherwise shows this list.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlite_utils import Database

from annotator.errors import AnnotatorError
from annotator.label_sources import CONSENSUS, KINDS, SourceKind
from annotator.report.sources import load, people, read_verdicts, resolve
from annotator.store import report_tables
from annotator.taxonomy import Taxonomy


class SourceNeeded(AnnotatorError):
    """A command that needs a label source was given none and there is not exactly one to take
    (a usage error: the front end lists the sources and exits with status 2)."""


@dataclass(frozen=True)
class SourceSummary:
    """One label source as ``mast sources`` lists it."""

    name: str
    kind: SourceKind
    finished: int  # trajectories it finished
    modes: tuple[str, ...]  # the codebook's modes it gave verdicts on (in its finished trajectories)
    last_activity: str | None  # newest label or review change, ISO 8601
    codebook_modes: int  # how many modes the codebook has

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": str(self.kind), "kind_title": KINDS[self.kind].title,
                "trajectories_finished": self.finished, "modes_covered": list(self.modes),
                "codebook_modes": self.codebook_modes, "last_activity": self.last_activity}


def summaries(db: Database, taxonomy: Taxonomy) -> list[SourceSummary]:
    """Every label source, stored ones by name, then consensus where there is one."""
    names = report_tables.source_names(db)
    if len(report_tables.reviewers(db)) >= 2:
        names.append(CONSENSUS)
    sources = [resolve(db, name) for name in names]
    if not sources:
        return []
    mode_ids = taxonomy.mode_ids
    reading = read_verdicts(db, sources, mode_ids)
    try:
        cols = report_tables.trajectory_columns(db, reviewers=people(sources))
        verdicts = reading.result()
    finally:
        reading.cancel()
    ids = cols.ids
    last = report_tables.last_activity(db, sorted({m for s in sources for m in (s.members or (s.name,))}))
    out = []
    for source in sources:
        lab = load(db, source, ids, mode_ids, verdicts, cols.reviews)
        finished = int(lab.finished.sum())
        modes = tuple(m for m, c in zip(mode_ids, lab.covered.tolist(), strict=True) if c) if finished else ()
        stamps = [last.get(m) for m in (source.members or (source.name,))]
        out.append(SourceSummary(source.name, source.kind, finished, modes, max((s for s in stamps if s), default=None),
                                 len(mode_ids)))
    return out


def only_source(listed: list[SourceSummary], command: str) -> str:
    """The one label source there is, for a command run without ``--source``; SourceNeeded otherwise."""
    if len(listed) == 1:
        return listed[0].name
    if not listed:
        raise SourceNeeded(f"{command}: there are no label sources yet (annotate, prelabel or import labels first)")
    raise SourceNeeded(f"{command}: name a label source with --source; there are {len(listed)} (listed above)")
