"""Prevalence: the share of trajectories showing each mode and category, with Wilson intervals.

Prevalence here is per trajectory (how many of the trajectories show the mode), the quantity
the ITBench × MAST study uses; the MAST paper's percentages are shares of all flagged
failure instances, a different quantity. A cell the source left undecided (an unreadable
judge answer, a consensus tie, a mode missing from an imported set) is left out of that
mode's denominator, so ``n`` can differ between modes.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import chi2_contingency
from statsmodels.stats.proportion import proportion_confint

from annotator.report import bootstrap
from annotator.report.frame import FAILED, SUCCEEDED, Frame
from annotator.report.tables import num


def wilson(count: np.ndarray, nobs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilson 95% interval of count/nobs (NaN where nobs is 0)."""
    count = np.asarray(count, dtype=float)
    nobs = np.asarray(nobs, dtype=float)
    with np.errstate(all="ignore"):
        lo, hi = proportion_confint(count, nobs, alpha=0.05, method="wilson")
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    lo[nobs == 0] = np.nan
    hi[nobs == 0] = np.nan
    return lo, hi


def categories(frame: Frame, present: np.ndarray, known: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Category columns: present if any of its modes is; known if present or all its modes known."""
    of = np.asarray(frame.category_of())
    cats = [c.id for c in frame.taxonomy.categories if c.id in of]
    cp = np.stack([present[:, of == c].any(axis=1) for c in cats], axis=1)
    ck = np.stack([known[:, of == c].all(axis=1) for c in cats], axis=1) | cp
    return cats, cp, ck


def prevalence_records(names: list[str], present: np.ndarray, known: np.ndarray, **extra) -> list[dict]:
    """One record per column: n, count, prevalence, Wilson interval."""
    count = (present & known).sum(axis=0)
    nobs = known.sum(axis=0)
    lo, hi = wilson(count, nobs)
    share = bootstrap.ratio(count, nobs)
    return [
        {**extra, "mode": name, "n": int(nobs[i]), "count": int(count[i]), "prevalence": num(share[i]),
         "ci_low": num(lo[i]), "ci_high": num(hi[i])}
        for i, name in enumerate(names)
    ]


def overall(frame: Frame, present: np.ndarray, known: np.ndarray) -> list[dict]:
    """Per mode, then per category, over all rows of the frame."""
    cats, cp, ck = categories(frame, present, known)
    return prevalence_records(list(frame.mode_ids), present, known) + prevalence_records(cats, cp, ck)


def by_group(frame: Frame, present: np.ndarray, known: np.ndarray, column: str) -> list[dict]:
    """Per mode and category within each value of a grouping column (system, model...)."""
    cats, cp, ck = categories(frame, present, known)
    out: list[dict] = []
    for level in frame.levels(column):
        rows = frame.in_level(column, level)
        out += prevalence_records(list(frame.mode_ids), present[rows], known[rows], **{column: level})
        out += prevalence_records(cats, cp[rows], ck[rows], **{column: level})
    return out


def homogeneity(frame: Frame, present: np.ndarray, known: np.ndarray, column: str) -> list[dict]:
    """Per mode and category: does prevalence differ between the levels of ``column``?

    Pearson's χ² test (scipy ``chi2_contingency``) on the levels × {present, absent} table of
    the levels with a decided cell; with fewer than two such levels, or a mode nobody or
    everybody shows, there is nothing to test. The smallest expected count is given, since the
    test is unreliable below 5.
    """
    cats, cp, ck = categories(frame, present, known)
    names = [*frame.mode_ids, *cats]
    hits, decided = np.hstack([present & known, cp]), np.hstack([known, ck])
    levels = frame.levels(column)
    yes = np.stack([hits[frame.in_level(column, lv)].sum(axis=0) for lv in levels]) if levels else np.zeros((0, len(names)))
    n = np.stack([decided[frame.in_level(column, lv)].sum(axis=0) for lv in levels]) if levels else yes
    out = []
    for j, name in enumerate(names):
        rows = n[:, j] > 0
        table = np.column_stack([yes[rows, j], n[rows, j] - yes[rows, j]])
        rec = {"mode": name, "levels": int(rows.sum()), "chi2": None, "dof": None, "p": None, "min_expected": None}
        if rows.sum() >= 2 and table[:, 0].any() and table[:, 1].any():
            res = chi2_contingency(table, correction=False)
            rec.update({"chi2": num(res.statistic), "dof": int(res.dof), "p": num(res.pvalue, None),
                        "min_expected": num(res.expected_freq.min())})
        out.append(rec)
    return out


def modes_per_trajectory(present: np.ndarray) -> np.ndarray:
    """Number of distinct modes present in each trajectory."""
    return present.sum(axis=1)


def distribution(counts: np.ndarray, failed: np.ndarray, k: int) -> list[dict]:
    """How many trajectories show 0, 1, ... modes (up to the most any shows, at most k): all,
    failed, succeeded."""
    out = []
    for m in range(min(k, int(counts.max()) if len(counts) else 0) + 1):
        hit = counts == m
        out.append({"modes": m, "trajectories": int(hit.sum()), "failed": int((hit & (failed == FAILED)).sum()),
                    "succeeded": int((hit & (failed == SUCCEEDED)).sum())})
    return out


def mean_modes(counts: np.ndarray, failed: np.ndarray, frame: Frame | None = None,
               column: str | None = None) -> list[dict]:
    """Mean number of distinct modes per failed and per successful trajectory (per level of the
    frame's grouping ``column`` when given)."""
    levels = [None] if frame is None else frame.levels(column)
    out = []
    for level in levels:
        rows = np.ones(len(counts), dtype=bool) if level is None else frame.in_level(column, level)
        rec: dict = {column: level} if column else {}
        f = rows & (failed == FAILED)
        s = rows & (failed == SUCCEEDED)
        rec.update({
            "trajectories": int(rows.sum()),
            "mean_modes": num(counts[rows].mean()) if rows.any() else None,
            "failed": int(f.sum()),
            "mean_modes_failed": num(counts[f].mean()) if f.any() else None,
            "succeeded": int(s.sum()),
            "mean_modes_succeeded": num(counts[s].mean()) if s.any() else None,
        })
        out.append(rec)
    return out
