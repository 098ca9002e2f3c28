"""Gwet's AC1 for binary ratings: chance-corrected agreement that stays meaningful for rare modes.

Cohen's and Fleiss' κ take chance agreement as π² + (1 − π)², which tends to 1 as a mode gets
rare, so two raters who agree on 98 of 100 trajectories can get κ ≈ 0 (the kappa paradox).
Gwet's chance agreement tends to 0 instead, so AC1 reads close to the observed agreement
there. No permissively licensed library computes it (irrCAC pins an old scipy), so it is
implemented here from Gwet, K. L. (2008), "Computing inter-rater reliability and its variance
in the presence of high agreement", British Journal of Mathematical and Statistical
Psychology 61(1), 29–48, with Q = 2 categories:

    p_e = 1 / (Q − 1) · Σ_q π_q (1 − π_q) = 2 π (1 − π),    AC1 = (p_a − p_e) / (1 − p_e)

- two raters: p_a is the observed agreement and π the mean of the two raters' "present" rates;
- three or more (units every rater decided): p_a is Fleiss' mean per-unit agreement
  Σ_q r_q (r_q − 1) / (m (m − 1)) and π the mean over units of the share of raters saying present.

p_e is at most 1/2, so AC1 is defined wherever there is at least one unit. Every function is
vectorised, so the bootstrap replicates go through the same lines as the point estimate.
"""

from __future__ import annotations

import numpy as np

from annotator.report.bootstrap import ratio


def ac1(p_a: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """AC1 from the agreement p_a and the mean "present" rate π (NaN where either is)."""
    p_e = 2 * pi * (1 - pi)
    return (p_a - p_e) / (1 - p_e)


def ac1_two_raters(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray:
    """AC1 of 2×2 tables: ``a`` both present, ``b`` only the first, ``c`` only the second, ``d`` neither."""
    n = a + b + c + d
    return ac1(ratio(a + d, n), ratio(2 * a + b + c, 2 * n))


def ac1_many_raters(units: np.ndarray, agreement_sum: np.ndarray, ones: np.ndarray, m: int) -> np.ndarray:
    """Multi-rater AC1 over complete units from their count, Σ per-unit agreement and Σ raters saying present."""
    return ac1(ratio(agreement_sum, units), ratio(ones, units * m))
