"""Cluster bootstrap over trajectories, vectorised.

All modes and all sources of a trajectory move together (the trajectory is the cluster).
A replicate is a vector of resample counts w (how often each trajectory was drawn); every
statistic in the reports is a ratio of sums over trajectories, so a block of replicates is
one matrix product ``W @ X``, where the columns of X are the per-trajectory terms. The seed is
recorded in the report so every interval regenerates exactly. All statistics of one report
share the same replicates: their columns are gathered first (:class:`Plan`) and resampled
in one pass.

Trajectories whose terms are equal (:mod:`annotator.report.row_groups`) contribute the same
row of X, so ``W @ X`` is computed as ``C @ X_g``: X_g holds each group's row once and C counts,
per replicate, the draws that fell in each group. The draws are the same (one trajectory
index at a time from the seeded generator), so every replicate sum is the same number: the
counts are integers and the sums are taken in float64, exact where the float32 product of
whole counts was. Counting a million draws into some thousands of groups (a look-up in a
2-byte table and a small histogram) is far cheaper than a histogram over a million counters,
and the product shrinks with X: 200 replicates of a report's 70 columns over a million
trajectories took 4 s of CPU instead of 16.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from concurrent.futures import CancelledError, ThreadPoolExecutor
from threading import Event
from typing import TypeVar

import numpy as np

from annotator.report.row_groups import row_groups

T = TypeVar("T")

#: Replicates drawn per matrix product, at most.
CHUNK = 128
#: Resample counts in a block (two are held at once, the one multiplied and the next one): a
#: block of replicates is smaller over many groups (32 replicates × a million trajectories),
#: which changes nothing drawn.
BLOCK_CELLS = 2**25
#: Rows of the per-trajectory matrix written at a time, every column of them (a few MB).
FILL_ROWS = 8192
#: Share of distinct rows above which the terms are resampled per trajectory: an agreement's
#: terms (three sources × 14 modes, their pairs and onsets) leave four rows in five distinct, and
#: grouping them would only lay the same rows out again as float64 (2.4 GB at a million).
GROUPED_SHARE = 0.5


def weights(n: int, replicates: int, seed: int, group: np.ndarray | None = None,
            groups: int | None = None, dtype: type = np.int64, stop: Event | None = None) -> Iterator[np.ndarray]:
    """Blocks of resample counts (``dtype``, shape (≤CHUNK, groups)) for ``replicates`` replicates:
    per trajectory (``group`` None), or per group of trajectories (``group[i]`` is the group of
    trajectory i, of ``groups``).

    The draws are made one replicate at a time, in order, from one generator: numpy's yields
    the same stream however it is cut, so the replicates depend on the seed alone. Counting a
    replicate's draws (a scatter, longer than drawing them over a million trajectories) runs
    on two threads while the next replicates are drawn (drawing releases the GIL). The next
    block is drawn and counted while the caller multiplies this one (:func:`_ahead`), so the
    one generator, which no thread can share, is never idle waiting for the product. Once
    ``stop`` is set, the next block raises ``CancelledError`` instead.
    """
    rng = np.random.default_rng(seed)
    width = n if group is None else int(groups)
    table = None if group is None else group.astype(np.uint16 if width <= 2**16 else np.uint32)
    per_block = max(1, min(CHUNK, BLOCK_CELLS // max(width, 1)))
    drawn = np.int32 if n < 2**31 else np.int64

    def count(block: np.ndarray, i: int, draws: np.ndarray) -> None:
        block[i] = np.bincount(draws if table is None else np.take(table, draws), minlength=width)

    def blocks() -> Generator[np.ndarray, None, None]:
        done = 0
        with ThreadPoolExecutor(max_workers=2) as pool:
            while done < replicates:
                if stop is not None and stop.is_set():
                    raise CancelledError("resampling stopped")
                b = min(per_block, replicates - done)
                block = np.empty((b, width), dtype=dtype)
                counted = [pool.submit(count, block, i, rng.integers(0, n, size=n, dtype=drawn)) for i in range(b)]
                for c in counted:
                    c.result()
                yield block
                done += b

    return _ahead(blocks())


def _ahead(items: Generator[T, None, None]) -> Iterator[T]:
    """The items of ``items``, each next one made on a thread of its own while the caller uses
    the one it was given (two items exist at once)."""
    try:
        with ThreadPoolExecutor(max_workers=1) as maker:
            coming = maker.submit(next, items, None)
            while (item := coming.result()) is not None:
                coming = maker.submit(next, items, None)
                yield item
    finally:
        items.close()  # a caller that stops early: the maker has finished (the pool was left)


def sums(columns: np.ndarray, replicates: int, seed: int) -> np.ndarray:
    """Replicated column sums: (replicates, columns) for a (n, columns) matrix of per-row terms."""
    x = np.asarray(columns)
    x = x[:, None] if x.ndim == 1 else x
    return _grouped_sums([x[:, j] for j in range(x.shape[1])], x.shape[0], replicates, seed)


def _grouped_sums(columns: list[np.ndarray], n: int, replicates: int, seed: int,
                  stop: Event | None = None) -> np.ndarray:
    """Replicated sums of the n-long ``columns``, over the groups of identical rows."""
    if n == 0 or replicates <= 0:
        return np.zeros((0, len(columns)))
    first, group = row_groups(columns, n)
    if len(first) > GROUPED_SHARE * n:
        # Per trajectory in float32, the product of before the groups (the same sums): grouping
        # rows that are mostly distinct saves no work and would lay them out again in float64.
        x = np.empty((n, len(columns)), dtype=np.float32)
        for lo in range(0, n, FILL_ROWS):  # a band of rows at a time: a column's values land in
            rows = slice(lo, lo + FILL_ROWS)  # cached lines, not one line per value across 800 MB
            for j, column in enumerate(columns):
                x[rows, j] = column[rows]
        return np.vstack([(w @ x).astype(np.float64) for w in weights(n, replicates, seed, dtype=np.float32, stop=stop)])
    x = np.empty((len(first), len(columns)), dtype=np.float64)
    for j, column in enumerate(columns):
        x[:, j] = column[first]
    return np.vstack([w @ x for w in weights(n, replicates, seed, group, len(first), stop=stop)])


class Plan:
    """Columns of several statistics, resampled together in one pass with the same replicates.

    Each block is kept as float32 values, stored as int8 where those are small integers: over
    a million trajectories an agreement's 200 columns take 200 MB instead of 800, and only the
    distinct rows of the distinct columns are ever laid out for the product.
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

    def run(self, replicates: int, seed: int, stop: Event | None = None) -> dict[object, np.ndarray]:
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
        columns = [blocks[b][:, j] for b, j in (where[c] for c in first.tolist())]
        total = _grouped_sums(columns, blocks[0].shape[0], replicates, seed, stop)[:, index]
        edges = np.cumsum([0] + [block.shape[1] for block in blocks])
        return {k: total[:, edges[i]:edges[i + 1]] for i, k in enumerate(keys)}

    def start(self, replicates: int, seed: int) -> Resampling:
        """:meth:`run` begun on a thread of its own, so that the caller makes what needs no
        replicate meanwhile (the draws release the GIL); use it in a ``with`` block, whose end
        stops it if its result was not taken."""
        return Resampling(self, replicates, seed)


class Resampling:
    """A :meth:`Plan.run` under way: :meth:`result` waits for it; leaving the ``with`` block
    stops it at its next block of replicates, so that a caller that failed or was interrupted
    does not wait for seconds of draws nobody will read."""

    def __init__(self, plan: Plan, replicates: int, seed: int) -> None:
        self._stop = Event()
        pool = ThreadPoolExecutor(max_workers=1)
        self._running = pool.submit(plan.run, replicates, seed, self._stop)
        pool.shutdown(wait=False)

    def result(self) -> dict[object, np.ndarray]:
        return self._running.result()

    def __enter__(self) -> Resampling:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


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
