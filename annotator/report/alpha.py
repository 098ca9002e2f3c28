"""Krippendorff's alpha for binary nominal data, with missing values.

No permissively licensed library computes it (statsmodels 0.15 has none; the `krippendorff`
package is GPL-3.0 and serves only as the reference in the tests), so it is implemented here
from the definition in Krippendorff, K. (2011), "Computing Krippendorff's Alpha-Reliability",
https://repository.upenn.edu/asc_papers/43, section "Nominal data, any number of observers,
missing data":

    coincidences  o_ck = sum over units u with m_u >= 2 values of n_uck / (m_u - 1)
                  (n_uck = number of ordered pairs of values c, k in unit u, from different coders)
    n_c = sum_k o_ck,   n = sum_c n_c
    alpha = 1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c * n_k

Units with fewer than two values are not pairable and drop out. With two categories the
coincidences are per-unit terms that add up over units (:func:`coincidences`), so α over a
million trajectories × 14 modes is a function of three sums, and each bootstrap replicate is too;
the tests check it against the reference package on the same data, missing values included.
"""

from __future__ import annotations

import numpy as np


def coincidences(ones: np.ndarray, zeros: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-unit coincidence terms of binary data: o_11, o_00, o_10 (o_01 = o_10).

    ``ones`` and ``zeros`` count the coders who gave 1 and 0 in each unit (any shape); units
    with fewer than two values contribute nothing.
    """
    ones, zeros = np.asarray(ones, dtype=float), np.asarray(zeros, dtype=float)
    m = ones + zeros
    with np.errstate(all="ignore"):
        scale = np.where(m >= 2, 1.0 / np.maximum(m - 1, 1), 0.0)
    return ones * (ones - 1) * scale, zeros * (zeros - 1) * scale, ones * zeros * scale


def alpha_from_coincidences(o11: np.ndarray, o00: np.ndarray, o10: np.ndarray) -> np.ndarray:
    """Alpha from summed binary coincidences (vectorised over replicates); NaN where undefined."""
    n1 = o11 + o10
    n0 = o00 + o10
    n = n1 + n0
    with np.errstate(all="ignore"):
        return np.where(n1 * n0 > 0, 1 - (n - 1) * (2 * o10) / (2 * n1 * n0), np.nan)
