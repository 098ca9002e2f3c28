"""Prediction-powered mean estimation: a judge's labels on every trajectory, corrected by an audit.

A judge labels all N trajectories; people label a random (or stratified) sample of n of them.
The judge alone is biased by its errors, the people alone are unbiased but have only n
labels. Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic,
"Prediction-powered inference", *Science* 382, 2023) combines them: the judge's mean over all
N plus the people-minus-judge difference ("rectifier") measured on the n audited, which
removes the judge's bias whatever its errors are. PPI++ (Angelopoulos, Duchi and Zrnic,
arXiv 2311.01453, 2023) scales the judge's part by a power-tuning factor λ in [0, 1] chosen
from the data to minimise the variance, so a useless judge costs nothing (λ → 0 is the
people-only estimate) and a good one shrinks the interval.

With labelled-set weights w (normalised to mean 1) and λ, for one column:

    θ̂ = mean_N(λ Ŷ) + mean_n(w (Y − λ Ŷ))
    se² = std_N(λ Ŷ)² / N + std_n(w (Y − λ Ŷ))² / n          (std with ddof 0)
    λ = cov_n(w (Y − θ₁), w (Ŷ − θ₁)) / ((1 + n/N) var_{n+N}(w Ŷ − θ₁)), clipped to [0, 1]

where θ₁ is the λ = 1 estimate and the variance in λ is over the labelled and all N
predictions together (ddof 1). The interval is θ̂ ± z se. Weights w ∝ 1/π (π the inclusion
probability of an audited trajectory) give the Horvitz–Thompson form of a stratified audit;
its variance is the with-replacement approximation, which ignores the finite-population
correction and so errs on the wide side. These are the formulas of the authors' package
``ppi-python`` (``ppi_mean_pointestimate``, ``ppi_mean_ci``, ``classical_mean_ci``), which
the tests use as the reference: it is not a dependency, because it pulls numba, pandas and
gdown into every install for the three functions written out here.

Every function works column-wise (one column per mode), each column with its own λ.

λ is tuned only where the people and the judge each have at least ``MIN_POSITIVES`` positives
among the audited in a column: tuned on fewer, λ follows the noise of a handful of labels and the
interval comes out too narrow (``benchmarks/bench_ppi.py``: 86-88% coverage of a 2-4% mode with
200 audited), so there λ = 1, the plain PPI of the *Science* paper, whose interval keeps its
level there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

#: Audited positives a column needs before λ is tuned (below: λ = 1).
MIN_POSITIVES = 10


@dataclass(frozen=True)
class Estimates:
    """Per column: estimate, standard error and the two-sided interval (NaN where undefined)."""

    value: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray


def _z(alpha: float) -> float:
    return float(norm.ppf(1 - alpha / 2))


def _interval(value: np.ndarray, se: np.ndarray, alpha: float) -> Estimates:
    """θ ± z se; a zero standard error (no variation at all) leaves the interval undefined."""
    value, se = np.asarray(value, dtype=float), np.asarray(se, dtype=float)
    half = np.where(se > 0, _z(alpha) * se, np.nan)
    return Estimates(value, se, value - half, value + half)


def _2d(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x.reshape(-1, 1) if x.ndim == 1 else x


def _weights(n: int, w: np.ndarray | None) -> np.ndarray:
    """Labelled-set weights normalised to mean 1, as a column."""
    if w is None:
        return np.ones((n, 1))
    w = np.asarray(w, dtype=float)
    return (w / w.sum() * n).reshape(-1, 1)


def classical(y: np.ndarray, w: np.ndarray | None = None, alpha: float = 0.05) -> Estimates:
    """The people-only estimate: the (weighted) mean of the audited labels, CLT interval."""
    y = _2d(y)
    n = y.shape[0]
    if n == 0:
        nan = np.full(y.shape[1], np.nan)
        return Estimates(nan, nan, nan, nan)
    wy = _weights(n, w) * y
    return _interval(wy.mean(axis=0), wy.std(axis=0) / np.sqrt(n), alpha)


def power_tuning(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """PPI++'s λ per column (clipped to [0, 1]; 0 where the judge's labels do not vary)."""
    y, yhat, yhat_all = _2d(y), _2d(yhat), _2d(yhat_all)
    n, big_n = y.shape[0], yhat_all.shape[0]
    w = _weights(n, w)
    theta = yhat_all.mean(axis=0) + (w * (y - yhat)).mean(axis=0)
    g, gh = w * (y - theta), w * (yhat - theta)
    cov = ((g - g.mean(axis=0)) * (gh - gh.mean(axis=0))).sum(axis=0) / n
    var = np.var(np.vstack([gh, yhat_all - theta]), axis=0, ddof=1)
    with np.errstate(all="ignore"):
        lam = np.where(var > 0, cov / ((1 + n / big_n) * np.where(var > 0, var, 1)), 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_all: np.ndarray,
    w: np.ndarray | None = None,
    alpha: float = 0.05,
    lam: np.ndarray | float | None = None,
) -> tuple[Estimates, np.ndarray]:
    """The prediction-powered estimate per column, and the λ used (PPI++ tuned unless given).

    ``y`` and ``yhat`` are the people's and the judge's labels on the n audited rows (n × k),
    ``yhat_all`` the judge's labels on all N rows (N × k), ``w`` the audited rows' weights.
    """
    y, yhat, yhat_all = _2d(y), _2d(yhat), _2d(yhat_all)
    n, big_n, k = y.shape[0], yhat_all.shape[0], y.shape[1]
    if n == 0 or big_n == 0:
        nan = np.full(k, np.nan)
        return Estimates(nan, nan, nan, nan), nan
    if lam is None:
        few = np.minimum((y > 0).sum(axis=0), (yhat > 0).sum(axis=0)) < MIN_POSITIVES
        lam = np.where(few, 1.0, power_tuning(y, yhat, yhat_all, w))
    else:
        lam = np.broadcast_to(np.asarray(lam, float), (k,))
    wn = _weights(n, w)
    imputed = lam * yhat_all
    rectifier = wn * (y - lam * yhat)
    value = imputed.mean(axis=0) + rectifier.mean(axis=0)
    se = np.sqrt(imputed.std(axis=0) ** 2 / big_n + rectifier.std(axis=0) ** 2 / n)
    return _interval(value, se, alpha), np.asarray(lam, dtype=float)


def difference(a: Estimates, b: Estimates, alpha: float = 0.05) -> Estimates:
    """a − b for estimates from disjoint sets of trajectories (independent: variances add)."""
    return _interval(a.value - b.value, np.sqrt(a.se**2 + b.se**2), alpha)


def effective_n(n: int, people: Estimates, corrected: Estimates) -> np.ndarray:
    """How many audited trajectories the people-only estimate would need for PPI's precision:
    n × (people-only se / PPI se)²; NaN where either is undefined."""
    with np.errstate(all="ignore"):
        ratio = np.where((corrected.se > 0) & (people.se > 0), people.se / corrected.se, np.nan)
    return n * ratio**2
