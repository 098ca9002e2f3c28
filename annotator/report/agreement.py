"""Agreement statistics between label sources, per mode and pooled over (trajectory × mode) cells.

Point estimates come from the libraries: Cohen's κ from ``sklearn.metrics.cohen_kappa_score``,
Fleiss' κ from ``statsmodels.stats.inter_rater.fleiss_kappa`` (on the units × categories
count table), precision/recall/F1 from ``precision_recall_fscore_support``;
Krippendorff's α from :mod:`annotator.report.alpha` and Gwet's AC1 from :mod:`annotator.report.gwet`.
Every one of them is also a function of a
few sums over trajectories (2×2 cell counts, per-unit agreement, coincidences), which is how
the seeded cluster bootstrap computes thousands of replicates as matrix products; the tests
check the sum formulas against the libraries on the same data.

Rare modes make κ and α meaningless (the kappa paradox: 98% agreement with κ ≈ 0), so a mode
with fewer than ``MIN_POSITIVES`` trajectories marked present by any source is reported with
prevalence, observed, positive and negative agreement, and "not estimable" for κ and α.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support
from statsmodels.stats.inter_rater import fleiss_kappa

from annotator.report.alpha import (
    alpha_from_coincidences,
    coincidences,
    krippendorff_alpha_nominal,
)
from annotator.report.bootstrap import ratio
from annotator.report.gwet import ac1_many_raters, ac1_two_raters

MIN_POSITIVES = 10
POOLED = "all modes (pooled)"


def with_pooled(cols: list[np.ndarray]) -> np.ndarray:
    """Per-row terms laid out as every (n, K) column block side by side, then each block's row sum."""
    per_mode = np.concatenate([np.asarray(x, dtype=np.float32) for x in cols], axis=1)
    pooled = np.column_stack([np.asarray(x, dtype=np.float32).sum(axis=1) for x in cols])
    return np.concatenate([per_mode, pooled], axis=1)


@dataclass
class Pair:
    """Two sources' cells: ``a`` both present, ``b`` only the first, ``c`` only the second, ``d`` neither.

    Each is a bool (n, K) matrix over the rows where both sources decided the cell.
    """

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray

    @classmethod
    def of(cls, p1: np.ndarray, k1: np.ndarray, p2: np.ndarray, k2: np.ndarray) -> Pair:
        both = k1 & k2
        return cls(p1 & p2 & both, p1 & ~p2 & both, ~p1 & p2 & both, ~p1 & ~p2 & both)

    def per_row(self) -> np.ndarray:
        """Per-trajectory terms a, a + b, a + c, a + b + c + d per mode, then pooled: (n, 4 (K + 1)).

        These margins rather than the four cells: "first present" and "both decided" are the
        same columns for every pair and mode a source decided everywhere, so the bootstrap
        resamples them once (:func:`annotator.report.bootstrap.distinct_columns`).
        """
        return with_pooled([self.a, self.a | self.b, self.a | self.c, self.a | self.b | self.c | self.d])


def split_counts(sums: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """(a, b, c, d) each (..., K + 1) from sums laid out as :meth:`Pair.per_row`."""
    blocks = [np.concatenate([sums[..., i * k:(i + 1) * k], sums[..., 4 * k + i:4 * k + i + 1]], axis=-1)
              for i in range(4)]
    a, first, second, both = blocks
    return a, first - a, second - a, both - first - second + a


def kappa_from_counts(a, b, c, d) -> np.ndarray:
    """Cohen's κ of a 2×2 table (vectorised); NaN where chance agreement is 1."""
    n = a + b + c + d
    po = ratio(a + d, n)
    pe = ratio((a + b) * (a + c) + (c + d) * (b + d), n * n)
    with np.errstate(all="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def agreement_from_counts(a, b, c, d) -> dict[str, np.ndarray]:
    """Observed, positive and negative agreement, PABAK, κ, AC1, precision/recall (of the 2nd vs the 1st)."""
    n = a + b + c + d
    po = ratio(a + d, n)
    return {
        "n": n, "po": po, "pa": ratio(2 * a, 2 * a + b + c), "na": ratio(2 * d, 2 * d + b + c),
        "pabak": 2 * po - 1, "kappa": kappa_from_counts(a, b, c, d), "ac1": ac1_two_raters(a, b, c, d),
        "precision": ratio(a, a + c), "recall": ratio(a, a + b),
    }


#: The four cells of a 2×2 table as (first, second) rating pairs: a, b, c, d.
_CELLS = (np.array([1, 1, 0, 0]), np.array([1, 0, 1, 0]))


def cohen(a: float, b: float, c: float, d: float) -> float:
    """sklearn's Cohen's κ of the 2×2 table (a both, b first only, c second only, d neither).

    sklearn receives the four cells weighted by their counts: the same confusion matrix as
    the full label vectors, without validating millions of elements. NaN where undefined.
    """
    weights = np.array([a, b, c, d], dtype=float)
    if weights.sum() == 0:
        return float("nan")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return float(cohen_kappa_score(*_CELLS, sample_weight=weights))


def reference_scores(a: float, b: float, c: float, d: float) -> tuple[float, float, float]:
    """sklearn's precision, recall and F1 of the second rater against the first (the reference)."""
    weights = np.array([a, b, c, d], dtype=float)
    if weights.sum() == 0:
        return float("nan"), float("nan"), float("nan")
    p, r, f, _ = precision_recall_fscore_support(*_CELLS, sample_weight=weights, average="binary",
                                                 zero_division=np.nan)
    return float(p), float(r), float(f)


@dataclass
class Raters:
    """Three or more sources on the same cells: per unit, how many said present and decided."""

    ones: np.ndarray  # (n, K) sources saying present
    decided: np.ndarray  # (n, K) sources that decided the cell
    m: int  # number of sources

    def complete(self) -> np.ndarray:
        return self.decided == self.m

    def fleiss_terms(self) -> np.ndarray:
        """Per-row terms over complete units: unit count, sum P_i, sum of ones; per mode then pooled."""
        full = self.complete()
        m = self.m
        zeros = self.decided - self.ones
        p_i = np.where(full, (self.ones**2 + zeros**2 - m) / (m * (m - 1)), 0.0)
        ones = np.where(full, self.ones, 0)
        cols = [full.astype(np.float32), p_i.astype(np.float32), ones.astype(np.float32)]
        return with_pooled(cols)

    def alpha_terms(self) -> np.ndarray:
        """Per-row coincidence terms o_11, o_00, o_10: per mode then pooled (missing allowed)."""
        cols = coincidences(self.ones, self.decided - self.ones)
        return with_pooled(cols)


def fleiss_from_terms(sums: np.ndarray, k: int, m: int) -> np.ndarray:
    """Fleiss' κ per mode and pooled from summed :meth:`Raters.fleiss_terms` (vectorised)."""
    units, p_sum, ones = _three_blocks(sums, k)
    p_bar = ratio(p_sum, units)
    p1 = ratio(ones, units * m)
    pe = p1**2 + (1 - p1) ** 2
    with np.errstate(all="ignore"):
        return np.where(pe < 1, (p_bar - pe) / (1 - pe), np.nan)


def ac1_from_terms(sums: np.ndarray, k: int, m: int) -> np.ndarray:
    """Gwet's multi-rater AC1 per mode and pooled from summed :meth:`Raters.fleiss_terms` (same units)."""
    return ac1_many_raters(*_three_blocks(sums, k), m)


def _three_blocks(sums: np.ndarray, k: int) -> list[np.ndarray]:
    """The three per-mode blocks of a :func:`with_pooled` layout, each with its pooled column last."""
    return [np.concatenate([sums[..., i * k:(i + 1) * k], sums[..., 3 * k + i:3 * k + i + 1]], axis=-1)
            for i in range(3)]


def alpha_sums_from_pairs(pair_sums: list[np.ndarray], k: int, m: int) -> np.ndarray:
    """Summed :meth:`Raters.alpha_terms` from the summed :meth:`Pair.per_row` of every pair of sources.

    With every unit rated by all ``m`` sources the coincidences are the pairs' 2×2 tables added
    up: o_11 = 2 Σ a / (m - 1), o_00 = 2 Σ d / (m - 1), o_10 = Σ (b + c) / (m - 1), so α needs
    no resampling of its own.
    """
    cells = [split_counts(s, k) for s in pair_sums]
    o11 = 2 * sum(c[0] for c in cells) / (m - 1)
    o00 = 2 * sum(c[3] for c in cells) / (m - 1)
    o10 = sum(c[1] + c[2] for c in cells) / (m - 1)
    return np.concatenate([o11[..., :k], o00[..., :k], o10[..., :k], o11[..., k:], o00[..., k:], o10[..., k:]],
                          axis=-1)


def fleiss_sums_from_alpha(sums: np.ndarray, k: int, m: int) -> np.ndarray:
    """Summed :meth:`Raters.fleiss_terms` from summed :meth:`Raters.alpha_terms`, all units complete.

    With every unit rated by all ``m`` sources, o_11 + o_00 + 2 o_10 = m per unit,
    P_i = (o_11 + o_00) / m and the count of "present" is o_11 + o_10, so Fleiss' κ needs no
    resampling of its own.
    """
    o11, o00, o10 = _three_blocks(sums, k)
    units, p_sum, ones = (o11 + o00 + 2 * o10) / m, (o11 + o00) / m, o11 + o10
    return np.concatenate([units[..., :k], p_sum[..., :k], ones[..., :k], units[..., k:], p_sum[..., k:],
                           ones[..., k:]], axis=-1)


def alpha_from_terms(sums: np.ndarray, k: int) -> np.ndarray:
    """Krippendorff's α per mode and pooled from summed :meth:`Raters.alpha_terms`."""
    return alpha_from_coincidences(*_three_blocks(sums, k))


def fleiss(ones: np.ndarray, m: int) -> float:
    """statsmodels' Fleiss κ of complete binary units (``ones`` = raters saying present per unit).

    The units × categories count table is what ``aggregate_raters`` would build from the
    units × raters matrix; with two categories it is (m - ones, ones).
    """
    if len(ones) == 0:
        return float("nan")
    table = np.column_stack([m - ones, ones]).astype(int)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(fleiss_kappa(table, method="fleiss"))


def alpha(values: np.ndarray) -> float:
    """Krippendorff's α (nominal) of a units × sources matrix of 1/0/NaN."""
    return krippendorff_alpha_nominal(values.T, n_coders=values.shape[1])


def onset_differences(o1: np.ndarray, o2: np.ndarray, both: np.ndarray) -> np.ndarray:
    """|onset1 - onset2| over cells both sources marked present with an onset; NaN elsewhere."""
    ok = both & ~np.isnan(o1) & ~np.isnan(o2)
    return np.where(ok, np.abs(o1 - o2), np.nan)
