"""A share of trajectories (a mode's prevalence) from an audit sample, stratified: the people-only
and the judge-corrected estimate, with intervals that hold for rare modes and stratified audits.

The population of N trajectories is split into cells; within a cell the audited rows are a simple
random sample (``mast sample`` draws each stratum at random). The estimate of the share is the
stratified (Horvitz–Thompson) mean

    θ̂ = Σ_c (N_c / N) p̂_c,    p̂_c = positives among the n_c audited of cell c / n_c

(Cochran, *Sampling Techniques*, 3rd ed. 1977, §5.2), whose variance Σ_c (N_c/N)² (1 − n_c/N_c)
p_c(1 − p_c) / n_c (§5.3) is summed from the cells. The people-only estimate uses the design's
strata as cells (one cell for a simple random audit). The judge-corrected estimate splits every
stratum further by the judge's verdict, which is known on all N: stratified PPI (Fisch et al.,
"Stratified prediction-powered inference for hybrid language model evaluation", NeurIPS 2024) with
the verdict as the stratum, where the judge is constant inside each cell and so each cell's PPI
estimate is its audited share. For a binary judge this is the estimator PPI++'s power tuning
(Angelopoulos, Duchi and Zrnic 2023) approaches: its asymptotic variance E[Var(Y | judge)] / n is
never above the people-only Var(Y) / n, whatever the judge's errors.

Rare modes leave a handful of positives per cell (none, often, in a heavily weighted stratum),
where a normal (Wald) interval is far too short. So each cell's proportion gets the
Agresti–Coull interval (Agresti and Coull, *Am. Stat.* 52, 1998; statsmodels) shrunk by the
finite-population factor √(1 − n_c/N_c), and the cells are combined by MOVER, the method of
variance estimates recovery (Zou and Donner, *Stat. Med.* 27, 2008; Zou, Huang and Zhang,
*Comput. Stat. Data Anal.* 53, 2009): for θ = Σ c_i p_i with component intervals (l_i, u_i),

    L = θ̂ − √(Σ_{c_i>0} c_i²(p̂_i − l_i)² + Σ_{c_i<0} c_i²(u_i − p̂_i)²)
    U = θ̂ + √(Σ_{c_i>0} c_i²(u_i − p̂_i)² + Σ_{c_i<0} c_i²(p̂_i − l_i)²)

(with Wilson components and c = (1, −1) it is Newcombe's interval for a difference, which the
tests check against statsmodels). ``benchmarks/bench_ppi.py`` shows the coverage per mode.

A verdict cell with no audited row is merged back into its stratum (the stratum is then
estimated without the judge); a stratum with members but no audited row leaves the estimate
undefined, because nothing was seen of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from statsmodels.stats.proportion import proportion_confint


@dataclass(frozen=True)
class Share:
    """An estimate and its interval (NaN where undefined)."""

    value: float
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low


UNDEFINED = Share(np.nan, np.nan, np.nan)


def mover(parts: list[tuple[float, Share]]) -> Share:
    """Σ c_i θ_i for independent estimates θ_i with intervals, by MOVER (Zou and Donner 2008)."""
    value = sum(c * s.value for c, s in parts)
    down = sum(c * c * ((s.value - s.low) if c > 0 else (s.high - s.value)) ** 2 for c, s in parts)
    up = sum(c * c * ((s.high - s.value) if c > 0 else (s.value - s.low)) ** 2 for c, s in parts)
    return Share(float(value), float(value - np.sqrt(down)), float(value + np.sqrt(up)))


def _cells(positives: np.ndarray, n: np.ndarray, size: np.ndarray, alpha: float) -> list[Share]:
    """Each cell's audited share with its Agresti–Coull interval, narrowed by the finite-population factor."""
    p = positives / n
    low, high = proportion_confint(positives, n, alpha=alpha, method="agresti_coull")
    shrink = np.sqrt(np.clip(1 - n / size, 0.0, 1.0))
    return [Share(*v) for v in zip(p, p - (p - low) * shrink, p + (high - p) * shrink, strict=True)]


def share(
    y: np.ndarray,
    stratum: np.ndarray,
    stratum_all: np.ndarray,
    verdict: np.ndarray | None = None,
    verdict_all: np.ndarray | None = None,
    alpha: float = 0.05,
) -> Share:
    """The share of positives among all N rows, from the audited rows' 0/1 values ``y``.

    ``stratum`` and ``stratum_all`` are the design stratum of the audited rows and of all N rows;
    with ``verdict`` (audited) and ``verdict_all`` (all N) the judge's 0/1 verdict splits every
    stratum (the judge-corrected estimate); without, the people-only estimate.
    """
    y, stratum, stratum_all = np.asarray(y, float), np.asarray(stratum), np.asarray(stratum_all)
    if len(stratum_all) == 0:
        return UNDEFINED
    cells: list[tuple[float, int, int]] = []  # (positives, audited, population) per cell
    for h in np.unique(stratum_all):
        in_h, all_h = stratum == h, stratum_all == h
        if not in_h.any():
            return UNDEFINED
        split = [(in_h, all_h)]
        if verdict is not None:
            by_verdict = [(in_h & (verdict == v), all_h & (verdict_all == v)) for v in (0, 1)]
            if all(rows.any() or not members.any() for rows, members in by_verdict):
                split = [(rows, members) for rows, members in by_verdict if members.any()]
        cells += [(y[rows].sum(), int(rows.sum()), int(members.sum())) for rows, members in split]
    positives, n, size = (np.asarray(c, dtype=float) for c in zip(*cells, strict=True))
    return mover(list(zip(size / len(stratum_all), _cells(positives, n, size, alpha), strict=True)))
