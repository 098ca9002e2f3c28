"""Agreement statistics between label sources, per mode and pooled over (trajectory × mode) cells.

Cohen's κ comes from ``sklearn.metrics.cohen_kappa_score`` and precision/recall/F1 from
``precision_recall_fscore_support`` (both on the four cells of the 2×2 table, weighted).
Fleiss' κ, Krippendorff's α (:mod:`annotator.report.alpha`) and Gwet's AC1
(:mod:`annotator.report.gwet`) are functions of a few sums over trajectories (2×2 cell counts,
per-unit agreement, coincidences): the point estimate is the function of the sums over every
trajectory, and the seeded cluster bootstrap computes thousands of replicates of the same sums
as matrix products. Over a million trajectories × 14 modes no units × raters matrix is built;
the tests check the sum formulas against statsmodels' ``fleiss_kappa``, the ``krippendorff``
package and sklearn on the same data.

Rare modes make κ and α meaningless (the kappa paradox: 98% agreement with κ ≈ 0), so a mode
with fewer than ``MIN_POSITIVES`` trajectories marked present by any source is reported with
prevalence, observed, positive and negative agreement, and "not estimable" for κ and α.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

from annotator.report.alpha import alpha_from_coincidences, coincidences
from annotator.report.bootstrap import ratio
from annotator.report.gwet import ac1_many_raters, ac1_two_raters

MIN_POSITIVES = 10
POOLED = "all modes (pooled)"


def pair_terms(p1: np.ndarray, k1: np.ndarray, p2: np.ndarray, k2: np.ndarray) -> np.ndarray:
    """Per-trajectory terms of two sources' 2×2 tables: a, a + b, a + c, a + b + c + d per mode,
    bool (n, 4 K); ``a`` both present, ``b`` only the first, ``c`` only the second, ``d`` neither,
    over the cells both decided.

    These margins rather than the four cells: "first present" and "both decided" are the
    same columns for every pair and mode a source decided everywhere, so the bootstrap
    resamples them once (:func:`annotator.report.bootstrap.distinct_columns`). The pooled
    table is the sum of the modes' (:func:`split_counts`), so it needs no columns of its own.
    """
    both = k1 & k2
    first, second = p1 & both, p2 & both
    return np.concatenate([first & second, first, second, both], axis=1)


def with_pooled(sums: np.ndarray, k: int, blocks: int) -> list[np.ndarray]:
    """Each of the ``blocks`` per-mode blocks of summed terms (..., blocks × K), with its pooled
    column (the sum over the modes) appended: (..., K + 1) each."""
    out = []
    for i in range(blocks):
        block = sums[..., i * k:(i + 1) * k]
        out.append(np.concatenate([block, block.sum(axis=-1, keepdims=True)], axis=-1))
    return out


def split_counts(sums: np.ndarray, k: int) -> tuple[np.ndarray, ...]:
    """(a, b, c, d) each (..., K + 1), the pooled table last, from summed :func:`pair_terms`."""
    a, first, second, both = with_pooled(sums, k, 4)
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
    """Two or more sources on the same cells: per unit, how many said present and decided."""

    ones: np.ndarray  # (n, K) sources saying present
    decided: np.ndarray  # (n, K) sources that decided the cell
    m: int  # number of sources

    @classmethod
    def of(cls, present: list[np.ndarray], known: list[np.ndarray]) -> Raters:
        """From each source's present and decided (n, K) bool matrices."""
        return cls(ones=np.sum(present, axis=0, dtype=np.int16), decided=np.sum(known, axis=0, dtype=np.int16),
                   m=len(present))

    def complete(self) -> np.ndarray:
        return self.decided == self.m

    def fleiss_terms(self) -> np.ndarray:
        """Per-row terms over complete units: unit count, P_i, ones, per mode: (n, 3 K)."""
        full = self.complete()
        m = self.m
        zeros = self.decided - self.ones
        p_i = np.where(full, (self.ones**2 + zeros**2 - m) / (m * (m - 1)), 0.0)
        ones = np.where(full, self.ones, 0)
        return np.concatenate([full, p_i, ones], axis=1, dtype=np.float64)

    def alpha_terms(self) -> np.ndarray:
        """Per-row coincidence terms o_11, o_00, o_10 per mode (missing allowed): (n, 3 K)."""
        return np.concatenate(coincidences(self.ones, self.decided - self.ones), axis=1)


def fleiss_from_terms(sums: np.ndarray, k: int, m: int) -> np.ndarray:
    """Fleiss' κ per mode and pooled from summed :meth:`Raters.fleiss_terms` (vectorised).

    Fleiss, J. L. (1971), "Measuring nominal scale agreement among many raters", Psychological
    Bulletin 76(5), 378–382: κ = (P̄ − P̄_e) / (1 − P̄_e), P̄ the mean per-unit agreement P_i and
    P̄_e = Σ_j p_j² over the categories' shares; the tests check it against statsmodels'
    ``fleiss_kappa``.
    """
    units, p_sum, ones = with_pooled(sums, k, 3)
    p_bar = ratio(p_sum, units)
    p1 = ratio(ones, units * m)
    pe = p1**2 + (1 - p1) ** 2
    with np.errstate(all="ignore"):
        return np.where(pe < 1, (p_bar - pe) / (1 - pe), np.nan)


def ac1_from_terms(sums: np.ndarray, k: int, m: int) -> np.ndarray:
    """Gwet's multi-rater AC1 per mode and pooled from summed :meth:`Raters.fleiss_terms` (same units)."""
    return ac1_many_raters(*with_pooled(sums, k, 3), m)


def alpha_sums_from_pairs(pair_sums: list[np.ndarray], k: int, m: int) -> np.ndarray:
    """Summed :meth:`Raters.alpha_terms` from the summed :func:`pair_terms` of every pair of sources.

    With every unit rated by all ``m`` sources the coincidences are the pairs' 2×2 tables added
    up: o_11 = 2 Σ a / (m - 1), o_00 = 2 Σ d / (m - 1), o_10 = Σ (b + c) / (m - 1), so α needs
    no resampling of its own.
    """
    cells = [split_counts(s, k) for s in pair_sums]
    o11 = 2 * sum(c[0] for c in cells) / (m - 1)
    o00 = 2 * sum(c[3] for c in cells) / (m - 1)
    o10 = sum(c[1] + c[2] for c in cells) / (m - 1)
    return np.concatenate([o11[..., :k], o00[..., :k], o10[..., :k]], axis=-1)


def fleiss_sums_from_alpha(sums: np.ndarray, k: int, m: int) -> np.ndarray:
    """Summed :meth:`Raters.fleiss_terms` from summed :meth:`Raters.alpha_terms`, all units complete.

    With every unit rated by all ``m`` sources, o_11 + o_00 + 2 o_10 = m per unit,
    P_i = (o_11 + o_00) / m and the count of "present" is o_11 + o_10, so Fleiss' κ needs no
    resampling of its own.
    """
    o11, o00, o10 = (sums[..., i * k:(i + 1) * k] for i in range(3))
    return np.concatenate([(o11 + o00 + 2 * o10) / m, (o11 + o00) / m, o11 + o10], axis=-1)


def alpha_from_terms(sums: np.ndarray, k: int) -> np.ndarray:
    """Krippendorff's α per mode and pooled from summed :meth:`Raters.alpha_terms`."""
    return alpha_from_coincidences(*with_pooled(sums, k, 3))


def onset_differences(o1: np.ndarray, o2: np.ndarray, both: np.ndarray) -> np.ndarray:
    """|onset1 - onset2| over cells both sources marked present with an onset; NaN elsewhere."""
    ok = both & ~np.isnan(o1) & ~np.isnan(o2)
    return np.where(ok, np.abs(o1 - o2), np.nan)
