"""The rule detectors on every core: worker processes compute, the runner's process stores.

The detectors are Python work on every character of every step, so one process uses one core
however many trajectories a run has. ``PooledRules`` hands each trajectory to a pool of worker
processes (one a core, forked, each with its own connection to the same database, only read),
which read its steps and run the detectors exactly as ``RulesLabeller`` does in process; the
verdicts come back to the runner, which stays the only writer and stores each trajectory's
labels in one transaction as before. An in-memory database (nothing to share) or one core
runs them in process.

A run of one long trajectory would still be one core's work, so a trajectory of at least
``SPLIT_STEPS`` steps is scanned twice at once, by two workers: one runs the near-duplicate
detector (FM-1.3, about half of a scan), the other the rest. Each reads the steps and reads
their text for itself (the detectors share nothing else), so the two together cost more CPU
than one scan, and the run ends sooner.

A worker ignores SIGINT (Ctrl-C reaches the whole process group: stopping the run is the
runner's to do, which then ends the workers) and does not wake the runner's event loop with
the signal-wakeup descriptor it inherits.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from itertools import chain
from types import TracebackType

from sqlite_utils import Database

from annotator.labelling.rules import RulesLabeller, _Detector
from annotator.labelling.verdicts import ModeVerdict
from annotator.models import Trajectory
from annotator.store import open_db
from annotator.taxonomy import Taxonomy

#: Steps from which a trajectory's detectors are split over two workers.
SPLIT_STEPS = 50_000
#: The modes of the first of the two scans of a long trajectory.
HEAVY = ("FM-1.3",)

#: The worker process's labeller, over its own connection (set by ``_start``).
_worker: RulesLabeller | None = None


def _start(path: str, detectors: dict[str, type[_Detector]]) -> None:
    global _worker
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _worker = RulesLabeller(detectors, db=open_db(path))


def _verdicts(trajectory: Trajectory, mode_ids: Sequence[str]) -> list[ModeVerdict]:
    assert _worker is not None
    return _worker.verdicts_for(trajectory, mode_ids)


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def database_file(db: Database) -> str:
    """The file behind ``db`` ('' for an in-memory database)."""
    return db.execute("PRAGMA database_list").fetchone()[2]


class PooledRules:
    """``RulesLabeller`` as the runner's labeller, its work spread over ``workers`` processes
    (one a core by default; started with the first trajectory, ended by ``close``)."""

    kind = "rules"
    needs_steps = False

    def __init__(self, db: Database, detectors: dict[str, type[_Detector]] | None = None, workers: int | None = None,
                 split_steps: int = SPLIT_STEPS):
        self.db = db
        self.local = RulesLabeller(detectors, db=db)
        self.split_steps = split_steps
        self.path = database_file(db)
        self.workers = cores() if workers is None else workers
        if not self.path or "fork" not in multiprocessing.get_all_start_methods():
            self.workers = 0
        self.pool: ProcessPoolExecutor | None = None

    async def label(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        if self.workers < 2:
            return self.local.verdicts(trajectory, taxonomy)
        if self.pool is None:
            # forked: the workers start at once, with the modules already loaded
            self.pool = ProcessPoolExecutor(self.workers, multiprocessing.get_context("fork"), initializer=_start,
                                            initargs=(self.path, self.local.detectors))
        loop = asyncio.get_running_loop()
        groups = [taxonomy.mode_ids]
        last = self.db.execute("SELECT max(idx) FROM steps WHERE trajectory_id = ?", [trajectory.id]).fetchone()[0]
        if last is not None and last + 1 >= self.split_steps:
            heavy = [m for m in taxonomy.mode_ids if m in HEAVY]
            groups = [g for g in (heavy, [m for m in taxonomy.mode_ids if m not in heavy]) if g]
        found = await asyncio.gather(*(loop.run_in_executor(self.pool, _verdicts, trajectory, g) for g in groups))
        order = {m: i for i, m in enumerate(self.local.detectors)}
        return sorted(chain.from_iterable(found), key=lambda v: order[v.mode_id])

    def close(self) -> None:
        """End the workers, at once: a run stopped midway does not wait for the trajectories they hold."""
        if self.pool is None:
            return
        for p in list(self.pool._processes.values()):  # no public way to end them before 3.14
            p.terminate()
        # the pool's own thread reaps them: a second waiter would race it for their exit status
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None

    def __enter__(self) -> PooledRules:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
