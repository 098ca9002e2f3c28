"""Cluster bootstrap over trajectories, vectorised.

All modes and all sources of a trajectory move together (the trajectory is the cluster).
A replicate is a vector of resample counts w (how often each trajectory was drawn); every
statistic in the reports is a ratio of sums over trajectories, so a block of replicates is
one matrix product ``W @ X``, where the columns of X are the per-trajectory terms. The seed is
recorded in the report so every interval regenerates exactly. All statistics of one report
share the same replicates: their columns are gathered first (:class:`Plan`) and resampled
in one pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Replicates drawn per matrix product, at most.
CHUNK = 128
#: Resample counts held at once (float32): a block of replicates is smaller over many
#: trajectories (32 replicates × a million trajectories, 128 MB), which changes nothing drawn.
BLOCK_CELLS = 2**25


def weights(n: int, replicates: int, seed: int) -> Iterator[np.ndarray]:
    """Blocks of resample-count rows (float32, shape (≤CHUNK, n)) for ``replicates`` replicates.

    The draws are made one replicate at a time, in order, from one generator: numpy's yields
    the same stream however it is cut, so the replicates depend on the seed alone. Counting a
    replicate's draws (a scatter over n counters, twice the time of drawing them over a million
    trajectories) runs on two threads while the next replicates are drawn; both release the GIL.
    """
    rng = np.random.default_rng(seed)
    per_block = max(1, min(CHUNK, BLOCK_CELLS // max(n, 1)))
    dtype = np.int32 if n < 2**31 else np.int64
    done = 0

    def count(block: np.ndarray, i: int, draws: np.ndarray) -> None:
        block[i] = np.bincount(draws, minlength=n)

    with ThreadPoolExecutor(max_workers=2) as pool:
        while done < replicates:
            b = min(per_block, replicates - done)
            block = np.empty((b, n), dtype=np.float32)
            counted = [pool.submit(count, block, i, rng.integers(0, n, size=n, dtype=dtype)) for i in range(b)]
            for c in counted:
                c.result()
            yield block
            done += b


def sums(columns: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """Replicated column sums: (replicates, columns) for a (n, columns) matrix of per-row terms."""
    x = np.ascontiguousarray(columns, dtype=np.float32)
    n = x.shape[0]
    if n == 0 or replicates <= 0:
        return np.zeros((0, x.shape[1]))
    return np.vstack([(w @ x).astype(np.float64) for w in weights(n, replicates, seed)])


class Plan:
    """Columns of several statistics, resampled together in one pass with the same replicates.

    Each block is kept as float32 values (what the matrix product multiplies), stored as int8
    where those are small integers: over a million trajectories an agreement's 200 columns
    take 200 MB instead of 800, and only the distinct ones are ever laid out as float32.
    """

    def __init__(self) -> None:
        self._blocks: dict[object, np.ndarray] = {}

    def add(self, key: object, columns: np.ndarray) -> None:
        block = np.asarray(columns)
        block = block[:, None] if block.ndim == 1 else block
        if block.dtype == bool:
            self._blocks[key] = block.view(np.int8)
        elif np.issubdtype(block.dtype, np.integer) and (not block.size or -128 <= block.min() <= block.max() <= 127):
            self._blocks[key] = block.astype(np.int8)
        else:
            block = block.astype(np.float32)
            small = block.astype(np.int8)
            self._blocks[key] = small if np.array_equal(small, block) else block

    def run(self, replicates: int, seed: int) -> dict[object, np.ndarray]:
        """Replicated column sums per key: (replicates, that block's columns).

        Columns that are equal over every trajectory (the same indicator needed by several
        statistics, a mode every source decided everywhere) are resampled once.
        """
        if not self._blocks or replicates <= 0:
            return {}
        keys = list(self._blocks)
        blocks = [self._blocks[k] for k in keys]
        first, index = distinct_columns(*blocks)
        where = [(b, j) for b, block in enumerate(blocks) for j in range(block.shape[1])]
        x = np.empty((blocks[0].shape[0], len(first)), dtype=np.float32)
        for i, column in enumerate(first.tolist()):
            b, j = where[column]
            x[:, i] = blocks[b][:, j]
        total = sums(x, replicates, seed)[:, index]
        edges = np.cumsum([0] + [block.shape[1] for block in blocks])
        return {k: total[:, edges[i]:edges[i + 1]] for i, k in enumerate(keys)}


def distinct_columns(*blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first of each group of identical columns, and for every column the position of its
    group; the columns are those of ``blocks`` side by side.

    Columns are grouped by a random projection and each grouping is confirmed element by
    element, so ``x[:, first][:, index]`` equals ``x`` exactly.
    """
    n = blocks[0].shape[0]
    where = [(b, j) for b, block in enumerate(blocks) for j in range(block.shape[1])]
    if not where or n == 0:
        return np.arange(len(where)), np.arange(len(where))
    r = np.random.default_rng(0).random(n).astype(np.float32)
    keys = np.concatenate([r @ block.astype(np.float32) for block in blocks])

    def column(j: int) -> np.ndarray:
        b, i = where[j]
        return blocks[b][:, i]

    first: list[int] = []
    index = np.empty(len(where), dtype=np.int64)
    seen: dict[float, list[int]] = {}
    for j, key in enumerate(keys.tolist()):
        match = next((g for g in seen.get(key, []) if np.array_equal(column(first[g]), column(j))), None)
        if match is None:
            match = len(first)
            first.append(j)
            seen.setdefault(key, []).append(match)
        index[j] = match
    return np.asarray(first, dtype=np.int64), index


def interval(reps: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval per column, ignoring undefined replicates; also their count per column."""
    reps = np.atleast_2d(reps)
    undefined = np.isnan(reps).sum(axis=0)
    tail = (1 - level) / 2 * 100
    with np.errstate(all="ignore"):
        lo = np.full(reps.shape[1], np.nan)
        hi = np.full(reps.shape[1], np.nan)
        ok = undefined < reps.shape[0]
        if ok.any() and reps.shape[0]:
            lo[ok] = np.nanpercentile(reps[:, ok], tail, axis=0)
            hi[ok] = np.nanpercentile(reps[:, ok], 100 - tail, axis=0)
    return lo, hi, undefined


#: Fewest trajectories a group needs for a resampling interval: with one, every replicate draws
#: that trajectory, all replicates are equal and the interval is a point that is not certainty.
MIN_RESAMPLED = 2


def withhold_degenerate(lo: np.ndarray, hi: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The interval bounds with NaN (undefined) where the group behind them has fewer than
    :data:`MIN_RESAMPLED` trajectories."""
    small = np.asarray(n) < MIN_RESAMPLED
    return np.where(small, np.nan, lo), np.where(small, np.nan, hi)


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den with NaN where den is 0."""
    with np.errstate(all="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
