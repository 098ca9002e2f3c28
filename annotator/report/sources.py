"""Label sources: whose labels a report counts, and which trajectories each source has finished.

A report runs over one source and an agreement over several. What "finished" means depends
on the kind of source, because an unfinished trajectory would turn "not looked at yet" into
"absent":

- a person (has review states): the trajectories they marked done;
- a pre-labelling run ``run:<id>``: the trajectories it gave a verdict for every mode it
  covers (a rules run covers the few modes its detectors look for; a judge run all of them);
- an imported set (``mad-llm``, ``mad-human-2``, labels restored from an export, any
  annotator without review states): the trajectories it has labels for;
- ``consensus`` (or ``consensus:alice,bob``): per mode, the majority verdict of the people who
  finished the trajectory; a tie is an undecided cell, counted and reported, never broken.

Every trajectory a source leaves out is counted under a reason, so a report can say what
it did not count and why.

Whether a source's labels were made by people matters for the human ceiling of an agreement
(judge–human κ is read against human–human κ); the names and their kinds are the vocabulary
of :mod:`annotator.label_sources`, which this module only loads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from sqlite_utils import Database

from annotator.errors import NotFound, ReportError
from annotator.label_sources import KINDS, SourceKind, classify, parse
from annotator.store import report_tables
from annotator.store.labels import annotators


@dataclass(frozen=True)
class Source:
    """A resolved label source."""

    name: str
    kind: SourceKind
    members: tuple[str, ...] = ()
    detail: str = ""

    @property
    def human(self) -> bool:
        """Whether the source's labels were made by people."""
        return KINDS[self.kind].human


@dataclass
class SourceLabels:
    """One source's verdicts over a fixed list of trajectories (rows) and modes (columns)."""

    source: Source
    finished: np.ndarray  # bool (n,)
    present: np.ndarray  # bool (n, K)
    known: np.ndarray  # bool (n, K): present or absent (not unknown, missing or tied)
    onset: np.ndarray  # float (n, K), NaN where no onset
    not_finished: Counter = field(default_factory=Counter)  # reason -> trajectories
    ties: list[tuple[int, int]] = field(default_factory=list)  # (row, mode) undecided by consensus
    raters: np.ndarray | None = None  # consensus: people who finished each row
    outside_codebook: int = 0  # verdicts on modes the codebook does not have
    covered: np.ndarray | None = None  # bool (K,): the modes it gave verdicts on (None: every mode)


def resolve(db: Database, name: str) -> Source:
    """What kind of source ``name`` is (one query at most); NotFound if no labels stand under it."""
    parsed = parse(name)
    if parsed.kind is SourceKind.CONSENSUS:
        members = parsed.members or tuple(report_tables.reviewers(db))
        if not members:
            raise ReportError("consensus needs people who marked trajectories done; there are none")
        return Source(name, SourceKind.CONSENSUS, members, "majority of " + ", ".join(members))
    facts = report_tables.source_facts(db, parsed)
    kind = classify(parsed, facts)
    if kind is not SourceKind.PERSON and not facts.labelled:
        known = annotators(db)
        listed = ", ".join(known[:12]) + (" ..." if len(known) > 12 else "")
        raise NotFound(f"no labels by {name!r}; sources with labels: {listed or 'none'}")
    detail = facts.run_detail if kind is SourceKind.RUN else KINDS[kind].finished
    if kind is SourceKind.IMPORTED_HUMAN:
        detail = "human ratings, " + detail
    return Source(name, kind, detail=detail)


def rows_for(ids: np.ndarray, tids) -> tuple[np.ndarray, np.ndarray]:
    """Positions in the sorted ``ids`` of the given trajectory ids, and which of them are there.

    The usual case, a source's rows read in id order over every trajectory, is recognised by
    one comparison: a binary search of a million strings takes a second.
    """
    if not len(tids) or not len(ids):
        return np.zeros(len(tids), dtype=np.int64), np.zeros(len(tids), dtype=bool)
    arr = np.asarray(tids)
    if len(arr) == len(ids) and np.array_equal(arr, ids):
        return np.arange(len(ids)), np.ones(len(ids), dtype=bool)
    pos = np.searchsorted(ids, arr)
    pos = np.minimum(pos, len(ids) - 1)
    return pos, ids[pos] == arr


def annotators_of(sources: list[Source]) -> list[str]:
    """Every annotator whose labels the sources are made of (consensus members included)."""
    names = [m for s in sources for m in (s.members if s.kind is SourceKind.CONSENSUS else (s.name,))]
    return list(dict.fromkeys(names))


def people(sources: list[Source]) -> list[str]:
    """The annotators whose review states may say what they finished: the people among the
    sources and the members of a consensus."""
    names = [m for s in sources if s.kind in (SourceKind.PERSON, SourceKind.CONSENSUS)
             for m in (s.members if s.kind is SourceKind.CONSENSUS else (s.name,))]
    return list(dict.fromkeys(names))


def read_verdicts(db: Database, sources: list[Source], mode_ids: tuple[str, ...]) -> report_tables.VerdictReads:
    """The folded verdict rows of every annotator behind ``sources``, read in parallel, in four
    ranges of trajectory ids each; started at once, the reads returned give them
    (``report_tables.verdict_rows_many``)."""
    return report_tables.verdict_rows_many(db, annotators_of(sources), mode_ids, report_tables.id_splits(db, 4))


def _annotator_labels(db: Database, name: str, ids: np.ndarray, mode_ids: tuple[str, ...],
                      verdicts: report_tables.Verdicts) -> tuple:
    """present, absent, unknown (n, K) and onset (n, K) of one annotator over ``ids``."""
    n, k = len(ids), len(mode_ids)
    present = np.zeros((n, k), dtype=bool)
    absent = np.zeros((n, k), dtype=bool)
    unknown = np.zeros((n, k), dtype=bool)
    onset = np.full((n, k), np.nan)
    if not len(verdicts.tids) or not n:
        return present, absent, unknown, onset
    pos, ok = rows_for(ids, verdicts.tids)
    cells = verdicts.cells[ok[verdicts.cells[:, 0]]]
    r, code, step = pos[cells[:, 0]], cells[:, 1], cells[:, 2]
    mode, is_present = code >> 1, (code & 1) == 1
    present[r[is_present], mode[is_present]] = True
    unknown[r[~is_present], mode[~is_present]] = True
    timed = is_present & (step >= 0)
    onset[r[timed], mode[timed]] = step[timed]
    complete = ok & (verdicts.total == k)
    rows = pos[complete]
    if len(rows) == n:  # every trajectory has a verdict on every mode (the rows are distinct): no gather
        absent = ~(present | unknown)
    else:
        absent[rows] = ~(present[rows] | unknown[rows])
    partial = ok & (verdicts.total < k) & (verdicts.absent > 0)
    if partial.any():
        cells = report_tables.absent_cells(db, name, verdicts.tids[partial].tolist())
        index = {m: j for j, m in enumerate(mode_ids)}
        cells = [(t, index[m]) for t, m in cells if m in index]
        if cells:
            ctids, cmodes = zip(*cells, strict=True)
            cpos, cok = rows_for(ids, np.asarray(ctids, dtype=str))
            absent[cpos[cok], np.asarray(cmodes)[cok]] = True
    return present, absent, unknown, onset


def load(db: Database, source: Source, ids: np.ndarray, mode_ids: tuple[str, ...], verdicts: dict,
         reviews: dict[str, np.ndarray]) -> SourceLabels:
    """The source's labels over the trajectories ``ids`` (sorted), with what it left unfinished.

    ``verdicts`` holds the rows :func:`read_verdicts` read for the source's annotators, and
    ``reviews`` the review codes of :func:`people` over ``ids`` (read with the trajectories,
    ``report_tables.trajectory_columns``).
    """
    if source.kind is SourceKind.CONSENSUS:
        return _consensus(db, source, ids, mode_ids, verdicts, reviews)
    present, absent, unknown, onset = _annotator_labels(db, source.name, ids, mode_ids, verdicts[source.name])
    decided = present | absent | unknown
    any_label = decided.any(axis=1)
    reasons: Counter = Counter()
    if source.kind is SourceKind.PERSON:
        finished = _done(reviews[source.name], reasons)
    elif source.kind is SourceKind.RUN:
        complete = decided[:, modes_covered(decided)].all(axis=1) & any_label
        finished = complete
        reasons["labelled only some modes in the run"] = int((any_label & ~complete).sum())
        reasons["not labelled by the run"] = int((~any_label).sum())
    elif source.kind is SourceKind.ADJUDICATED:
        finished = decided.all(axis=1)
        reasons["disagreements still to decide"] = int((any_label & ~finished).sum())
        reasons["not adjudicated"] = int((~any_label).sum())
    else:
        finished = any_label
        reasons["no labels by this source"] = int((~any_label).sum())
    everything = bool(finished.all())  # the usual case: the matrices as they are, not masked copies
    return SourceLabels(
        source=source,
        finished=finished,
        present=present if everything else present & finished[:, None],
        known=(present | absent) if everything else (present | absent) & finished[:, None],
        onset=onset if everything else np.where(finished[:, None], onset, np.nan),
        not_finished=+reasons,
        outside_codebook=verdicts[source.name].outside_codebook,
        covered=modes_covered(decided if everything else decided[finished]),
    )


def modes_covered(decided: np.ndarray) -> np.ndarray:
    """The modes (columns) with a verdict in some row of ``decided``; every mode when no row has any,
    so that a source with nothing finished yet is not read as covering nothing."""
    cover = decided.any(axis=0)
    return cover if cover.any() else np.ones(decided.shape[1], dtype=bool)


def _done(review: np.ndarray, reasons: Counter) -> np.ndarray:
    """Which rows a person marked done, from their review codes (``report_tables.DONE`` ...)."""
    reasons["not marked done (in progress)"] = int((review == report_tables.IN_PROGRESS).sum())
    reasons["not marked done (not started)"] = int(np.isin(review, (report_tables.NOT_STARTED,
                                                                     report_tables.NO_REVIEW)).sum())
    return review == report_tables.DONE


def _consensus(db: Database, source: Source, ids: np.ndarray, mode_ids: tuple[str, ...],
               verdicts: dict, reviews: dict[str, np.ndarray]) -> SourceLabels:
    n, k = len(ids), len(mode_ids)
    yes = np.zeros((n, k), dtype=np.int16)
    no = np.zeros((n, k), dtype=np.int16)
    raters = np.zeros(n, dtype=np.int16)
    onsets = []
    cover = np.zeros(k, dtype=bool)
    for member in source.members:
        one = load(db, resolve(db, member), ids, mode_ids, verdicts, reviews)
        cover |= one.covered
        raters += one.finished
        yes += one.present
        no += one.known & ~one.present
        onsets.append(one.onset)
    finished = raters > 0
    present = yes > no
    tie = (yes == no) & (yes > 0)
    known = (yes != no) & finished[:, None]
    # The consensus onset of a present cell: the earliest step any agreeing rater gave.
    with np.errstate(all="ignore"):
        onset = np.fmin.reduce(np.stack(onsets), axis=0) if onsets else np.full((n, k), np.nan)
    onset = np.where(present, onset, np.nan)
    rows, cols = np.nonzero(tie)
    return SourceLabels(
        source=source,
        finished=finished,
        present=present,
        known=known,
        onset=onset,
        not_finished=+Counter({"finished by none of the people": int((~finished).sum())}),
        ties=list(zip(rows.tolist(), cols.tolist(), strict=True)),
        raters=raters,
        covered=cover,
    )
