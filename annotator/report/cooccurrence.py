"""Co-occurrence: how often two modes show in the same trajectory, and the lift over chance.

Lift(i, j) = P(i and j) / (P(i) P(j)) over the trajectories where both cells are decided;
1 means independence, above 1 that the two modes come together more often than chance. The
diagonal holds each mode's own count, with no lift.
"""

from __future__ import annotations

import numpy as np

from annotator.report.frame import Frame
from annotator.report.tables import num


def cooccurrence(frame: Frame, present: np.ndarray, known: np.ndarray) -> list[dict]:
    """One record per pair of distinct modes (i < j): count together, lift (a mode with itself
    says nothing and is left out)."""
    p = (present & known).astype(np.float64)  # BLAS; counts below 2**53 are exact
    k = known.astype(np.float64)
    both = p.T @ p  # trajectories with i and j present
    n_both = k.T @ k  # trajectories where i and j are both decided
    n_i = p.T @ k  # trajectories with i present, among those where j is decided
    out = []
    ids = frame.mode_ids
    for i in range(len(ids)):
        for j in range(i + 1, len(ids)):
            n = n_both[i, j]
            expected = n_i[i, j] * n_i[j, i] / n if n else 0
            out.append({"mode": ids[i], "with": ids[j], "together": int(both[i, j]), "n": int(n),
                        "lift": num(both[i, j] / expected) if expected else None})
    return out
