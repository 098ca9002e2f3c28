"""The pass of `mast agreement` over the trajectories: every per-trajectory term it needs.

The statistics (:mod:`annotator.report.agreement_report`) are functions of sums of terms per
trajectory, and the bootstrap resamples those terms; computing them is one memory-bound walk,
block by block, over the sources' label matrices, which is kept here apart from the tables built
from its results so that each side reads on its own: this module holds what is computed for every
trajectory and how its memory stays bounded, that one what is reported.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from annotator.report import agreement as ag
from annotator.report import bootstrap
from annotator.report.frame import Frame

#: The onset tolerances (steps) whose agreement is counted per trajectory, for the curve over k.
ONSET_TOLERANCES = (0, 1, 2, 3, 4, 5)

#: Trajectories whose terms are computed at a time: a block's temporaries are a few MB, whatever
#: the number of trajectories.
ROWS = 65_536


@dataclass
class Sums:
    """Terms over every trajectory of all the sources together, per mode: Fleiss' (3 K), α's
    coincidences (3 K), sources saying present and sources deciding (K each)."""

    fleiss: np.ndarray
    alpha: np.ndarray
    ones: np.ndarray
    decided: np.ndarray


@dataclass
class Walked:
    """What one pass over the trajectories gives (:func:`walk`)."""

    totals: dict  # ("pair", s1, s2) -> summed pair_terms (4 K)
    cells: dict  # (s1, s2) -> per mode, the onset differences where both gave an onset
    onsets: dict  # (s1, s2) -> summed onset_terms
    onset_clusters: dict  # (s1, s2) -> trajectories with a cell where both gave an onset
    sums: Sums
    complete: bool  # every source decided every cell


def walk(frame: Frame, sources: list[str], pairs: list[tuple[str, str]], plan: bootstrap.Plan) -> Walked:
    """Every per-trajectory term of the agreement, computed a block of :data:`ROWS` trajectories at
    a time (two blocks at once, one per core), and the columns the bootstrap resamples added to
    ``plan`` (bool and small integers, stored as int8): what is held over all trajectories is a
    byte per term, never a float matrix.

    With every cell decided by every source, Fleiss' κ and α follow from the pairs' replicated
    tables (:func:`annotator.report.agreement.alpha_sums_from_pairs`), so their terms are only
    summed; otherwise they are resampled too. The sources' onset matrices (8 bytes a cell) are
    released once read, before the bootstrap lays out its columns: the frame keeps empty ones.
    """
    n, k, m = frame.n, len(frame.mode_ids), len(sources)
    labels = [frame.labels[s] for s in sources]
    complete = all(bool(lab.known.all()) for lab in labels)
    terms = {p: np.empty((n, 4 * k), dtype=bool) for p in pairs}
    onsets = {p: np.empty((n, 1 + len(ONSET_TOLERANCES)), dtype=np.int16) for p in pairs}
    cells: dict = {p: [[] for _ in range(k)] for p in pairs}
    rater_terms = None if complete or m < 3 else (np.empty((n, 3 * k), np.float32), np.empty((n, 3 * k), np.float32))
    sums = Sums(np.zeros(3 * k), np.zeros(3 * k), np.zeros(k), np.zeros(k))
    index = {s: i for i, s in enumerate(sources)}

    def one(lo: int) -> tuple:
        """The block of rows from ``lo``: its rows of the held terms written, its sums and onset
        differences returned (numpy releases the GIL, so two blocks run at once)."""
        rows = slice(lo, min(lo + ROWS, n))
        present = [lab.present[rows] for lab in labels]
        known = [lab.known[rows] for lab in labels]
        diffs = {}
        for s1, s2 in pairs:
            i, j = index[s1], index[s2]
            terms[(s1, s2)][rows] = ag.pair_terms(present[i], known[i], present[j], known[j])
            diff = ag.onset_differences(labels[i].onset[rows], labels[j].onset[rows], present[i] & present[j])
            onsets[(s1, s2)][rows] = onset_terms(diff)
            has = ~np.isnan(diff)
            diffs[(s1, s2)] = [diff[has[:, col], col] for col in range(k)]
        raters = ag.Raters.of(present, known)
        fleiss, alpha = raters.fleiss_terms(), raters.alpha_terms()
        if rater_terms is not None:
            rater_terms[0][rows], rater_terms[1][rows] = fleiss, alpha
        return (diffs, fleiss.sum(axis=0, dtype=np.float64), alpha.sum(axis=0, dtype=np.float64),
                raters.ones.sum(axis=0), raters.decided.sum(axis=0))

    with ThreadPoolExecutor(max_workers=2) as pool:
        for diffs, fleiss, alpha, ones, decided in pool.map(one, range(0, n, ROWS)):  # in order
            for p in pairs:
                for parts, d in zip(cells[p], diffs[p], strict=True):
                    parts.append(d)
            sums.fleiss += fleiss
            sums.alpha += alpha
            sums.ones += ones
            sums.decided += decided
    totals, onset_totals, onset_clusters = {}, {}, {}
    for p in pairs:
        totals[("pair", *p)] = terms[p].sum(axis=0, dtype=np.float64)
        plan.add(("pair", *p), terms.pop(p))
        block = onsets.pop(p)
        onset_totals[p] = block.sum(axis=0, dtype=np.int64)
        onset_clusters[p] = int((block[:, 0] > 0).sum())
        plan.add(("onset", *p), block)
        cells[p] = [np.concatenate(parts) if parts else np.zeros(0) for parts in cells[p]]
    if rater_terms is not None:
        plan.add("fleiss", rater_terms[0])
        plan.add("alpha", rater_terms[1])
    for lab in labels:  # read: the differences above are all the agreement needs of them (a new
        lab.onset = np.empty((0, k))  # array, as a view would keep the matrix alive)
    return Walked(totals, cells, onset_totals, onset_clusters, sums, complete)


def onset_terms(diff: np.ndarray) -> np.ndarray:
    """Per trajectory: cells with both onsets, and how many of them agree within each tolerance."""
    has = ~np.isnan(diff)
    filled = np.where(has, diff, np.inf)
    return np.column_stack([has.sum(axis=1)] + [(filled <= t).sum(axis=1) for t in ONSET_TOLERANCES])
