"""Prediction-powered mean estimation: a judge's labels on every trajectory, corrected by an audit.

A judge labels all N trajectories; people label a random (or stratified) sample of n of them.
The judge alone is biased by its errors, the people alone are unbiased but have only n
labels. Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic,
"Prediction-powered inference", *Science* 382, 2023) combines them: the judge's mean over all
N plus the people-minus-judge difference ("rectifier") measured on the n audited, which
removes the judge's bias whatever its errors are. PPI++ (Angelopoulos, Duchi and Zrnic,
arXiv 2311.01453, 2023) scales the judge's part by a power-tuning factor λ in [0, 1] chosen
from the data to minimise the variance, so a useless judge costs nothing (λ → 0 is the
people-only estimate) and a good one shrinks the interval; λ is always tuned, as
``ppi-python`` does with ``lam=None``.

For one column, with λ:

    θ̂ = mean_N(λ Ŷ) + mean_n(Y − λ Ŷ)
    se² = std_N(λ Ŷ)² / N + std_n(Y − λ Ŷ)² / n          (std with ddof 0)
    λ = cov_n(Y − θ₁, Ŷ − θ₁) / ((1 + n/N) var_{n+N}(Ŷ − θ₁)), clipped to [0, 1]

where θ₁ is the λ = 1 estimate and the variance in λ is over the labelled and all N
predictions together (ddof 1). The interval is θ̂ ± z se. These are the formulas of the
authors' package ``ppi-python`` (``ppi_mean_pointestimate``, ``ppi_mean_ci``,
``classical_mean_ci``), which the tests use as the reference: it is not a dependency, because
it pulls numba, pandas and gdown into every install for the few functions written out here.

A stratified audit is estimated stratum by stratum and combined with the strata's population
shares W_h = N_h / N (stratified PPI, Fisch et al., NeurIPS 2024; the stratified mean of
Cochran, *Sampling Techniques* 1977, §5.2-5.3): θ̂ = Σ_h W_h θ̂_h, se² = Σ_h W_h² se_h², each
stratum with its own λ_h. These functions serve means of counts (modes per trajectory); a
share of trajectories (a prevalence) is estimated by :mod:`annotator.report.stratified`, whose
intervals hold with few positives.

Every function works column-wise (one column per mode), each column with its own λ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

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


def classical(y: np.ndarray, alpha: float = 0.05) -> Estimates:
    """The people-only estimate: the mean of the audited labels, CLT interval."""
    y = _2d(y)
    n = y.shape[0]
    if n == 0:
        nan = np.full(y.shape[1], np.nan)
        return Estimates(nan, nan, nan, nan)
    return _interval(y.mean(axis=0), y.std(axis=0) / np.sqrt(n), alpha)


def power_tuning(y: np.ndarray, yhat: np.ndarray, yhat_all: np.ndarray) -> np.ndarray:
    """PPI++'s λ per column (clipped to [0, 1]; 0 where the judge's labels do not vary)."""
    y, yhat, yhat_all = _2d(y), _2d(yhat), _2d(yhat_all)
    n, big_n = y.shape[0], yhat_all.shape[0]
    theta = yhat_all.mean(axis=0) + (y - yhat).mean(axis=0)
    g, gh = y - theta, yhat - theta
    cov = ((g - g.mean(axis=0)) * (gh - gh.mean(axis=0))).sum(axis=0) / n
    var = np.var(np.vstack([gh, yhat_all - theta]), axis=0, ddof=1)
    with np.errstate(all="ignore"):
        lam = np.where(var > 0, cov / ((1 + n / big_n) * np.where(var > 0, var, 1)), 0.0)
    return np.clip(lam, 0.0, 1.0)


def ppi(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_all: np.ndarray,
    alpha: float = 0.05,
    lam: np.ndarray | float | None = None,
) -> tuple[Estimates, np.ndarray]:
    """The prediction-powered estimate per column, and the λ used (PPI++ tuned unless given).

    ``y`` and ``yhat`` are the people's and the judge's labels on the n audited rows (n × k),
    ``yhat_all`` the judge's labels on all N rows (N × k).
    """
    y, yhat, yhat_all = _2d(y), _2d(yhat), _2d(yhat_all)
    n, big_n, k = y.shape[0], yhat_all.shape[0], y.shape[1]
    if n == 0 or big_n == 0:
        nan = np.full(k, np.nan)
        return Estimates(nan, nan, nan, nan), nan
    lam = power_tuning(y, yhat, yhat_all) if lam is None else np.broadcast_to(np.asarray(lam, float), (k,))
    imputed = lam * yhat_all
    rectifier = y - lam * yhat
    value = imputed.mean(axis=0) + rectifier.mean(axis=0)
    se = np.sqrt(imputed.std(axis=0) ** 2 / big_n + rectifier.std(axis=0) ** 2 / n)
    return _interval(value, se, alpha), np.asarray(lam, dtype=float)


def stratified(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_all: np.ndarray,
    stratum: np.ndarray,
    stratum_all: np.ndarray,
    alpha: float = 0.05,
    lam: float | None = None,
) -> Estimates:
    """PPI per stratum, combined by the strata's population shares (``lam=0``: people only).

    ``stratum`` holds the audited rows' strata, ``stratum_all`` those of all N rows. A stratum
    with members but fewer than two audited rows leaves the estimate undefined.
    """
    y, yhat, yhat_all = _2d(y), _2d(yhat), _2d(yhat_all)
    stratum, stratum_all = np.asarray(stratum), np.asarray(stratum_all)
    k, big_n = y.shape[1], yhat_all.shape[0]
    value, var = np.zeros(k), np.zeros(k)
    for h in np.unique(stratum_all):
        rows = stratum == h
        if rows.sum() < 2:
            nan = np.full(k, np.nan)
            return Estimates(nan, nan, nan, nan)
        est, _ = ppi(y[rows], yhat[rows], yhat_all[stratum_all == h], alpha, lam)
        share = (stratum_all == h).sum() / big_n
        value, var = value + share * est.value, var + share**2 * est.se**2
    return _interval(value, np.sqrt(var), alpha)
