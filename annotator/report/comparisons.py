"""Comparisons between groups: one group's prevalence of a mode against the rest of the frame.

For each level of a grouping column (a system, a model) and each mode: the prevalence in
the group and in all other trajectories, their difference in percentage points (group minus
rest, Newcombe 95% interval) and their ratio (group divided by rest). The column names say
which is which, so a difference is never mistaken for a ratio.
"""

from __future__ import annotations

import warnings

import numpy as np
from statsmodels.stats.proportion import confint_proportions_2indep

from annotator.report.bootstrap import ratio
from annotator.report.frame import Frame
from annotator.report.tables import num


def group_vs_rest(frame: Frame, present: np.ndarray, known: np.ndarray, column: str) -> list[dict]:
    """Every level of ``column`` (when it has at least two) against the rest, per mode."""
    levels = frame.levels(column)
    if len(levels) < 2:
        return []
    out = []
    hits = present & known
    for level in levels:
        g = frame.in_level(column, level)
        n1, c1 = known[g].sum(0), hits[g].sum(0)
        n2, c2 = known[~g].sum(0), hits[~g].sum(0)
        p1, p2 = ratio(c1, n1), ratio(c2, n2)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lo, hi = confint_proportions_2indep(c1, n1, c2, n2, method="newcomb", compare="diff")
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        for j, mode in enumerate(frame.mode_ids):
            defined = n1[j] > 0 and n2[j] > 0
            out.append({
                column: level, "mode": mode,
                "group_n": int(n1[j]), "group_prevalence": num(p1[j]),
                "rest_n": int(n2[j]), "rest_prevalence": num(p2[j]),
                "diff_pp_group_minus_rest": num((p1[j] - p2[j]) * 100),
                "diff_ci_low_pp": num(lo[j] * 100) if defined else None,
                "diff_ci_high_pp": num(hi[j] * 100) if defined else None,
                "ratio_group_over_rest": num(p1[j] / p2[j]) if defined and p2[j] > 0 else None,
            })
    return out
