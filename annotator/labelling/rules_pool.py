"""The rule detectors on every core: worker processes compute, the runner's process stores.

The detectors are Python work on every character of every step, so one process uses one core
however many trajectories a run has. ``PooledRules`` hands each trajectory to a pool of worker
processes (one a core, each with its own read-only connection to the same database),
which read its steps and run the detectors exactly as ``RulesLabeller`` does in process; the
verdicts come back to the runner, which stays the only writer and stores each trajectory's
labels in one transaction as before. An in-memory database (nothing to share) or one core
runs them in process.

A run of one long trajectory would still be one core's work, so a trajectory of at least
``SPLIT_STEPS`` steps is scanned twice at once, by two workers: one runs the near-duplicate
detector (FM-1.3, about half of a scan), the other the rest. Each reads the steps and reads
their text for itself (the detectors share nothing else), so the two together cost more CPU
than one scan, and the run ends sooner.

The workers are started by a fork server (which has only imported the detectors), not forked
from the runner: a fork would copy the runner's open SQLite connection (unsafe, sqlite.org's
"How To Corrupt", 2.6) and any lock another thread (the progress bar's) holds at that moment.
The fork server and the workers ignore SIGINT and SIGTERM (Ctrl-C and a `kill` of the group
reach them too: stopping the run is the runner's to do, which then kills the workers; a server
ended by the signal would take its workers' exit status with it, which breaks the pool). A
worker that dies all the same (out of memory, SIGKILL) ends the run as ``RunInterrupted``; one
that cannot open the database fails each trajectory it is given with that ``StoreError``, which
ends the run: one line each, no traceback. A worker whose runner was killed outright ends too.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.connection
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import chain
from types import TracebackType

from sqlite_utils import Database

from annotator.errors import RunInterrupted, StoreError
from annotator.labelling.rules import RulesLabeller, _Detector
from annotator.labelling.verdicts import ModeVerdict
from annotator.models import Trajectory
from annotator.store import open_db_to_read
from annotator.taxonomy import Taxonomy

#: Steps from which a trajectory's detectors are split over two workers.
SPLIT_STEPS = 50_000
#: The modes of the first of the two scans of a long trajectory.
HEAVY = ("FM-1.3",)

#: The worker process's labeller, over its own connection (set by ``_start``), or why it has none.
_worker: RulesLabeller | StoreError | None = None


def _start(path: str, detectors: dict[str, type[_Detector]]) -> None:
    """A worker's start. A database it cannot open is kept to be raised at its first trajectory:
    an initializer's exception would be logged with its traceback and break the pool."""
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_end_with_runner, args=(multiprocessing.parent_process().sentinel,), daemon=True).start()
    try:
        _worker = RulesLabeller(detectors, db=open_db_to_read(path))
    except StoreError as exc:
        _worker = exc


def _end_with_runner(sentinel: int) -> None:
    """End the worker when the runner is gone. A runner killed outright cannot end its workers,
    and they would wait for work forever: the queue they read stays open while any of them
    holds it. The sentinel is the worker's end of a pipe whose other end only the runner holds."""
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _verdicts(trajectory: Trajectory, mode_ids: Sequence[str]) -> list[ModeVerdict]:
    if isinstance(_worker, StoreError):
        raise _worker
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
        if not self.path or "forkserver" not in multiprocessing.get_all_start_methods():
            self.workers = 0
        self.pool: ProcessPoolExecutor | None = None

    async def label(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        if self.workers < 2:
            return self.local.verdicts(trajectory, taxonomy)
        if self.pool is None:
            self.pool = self._start_pool()
        loop = asyncio.get_running_loop()
        groups = [taxonomy.mode_ids]
        last = self.db.execute("SELECT max(idx) FROM steps WHERE trajectory_id = ?", [trajectory.id]).fetchone()[0]
        if last is not None and last + 1 >= self.split_steps:
            heavy = [m for m in taxonomy.mode_ids if m in HEAVY]
            groups = [g for g in (heavy, [m for m in taxonomy.mode_ids if m not in heavy]) if g]
        try:
            found = await asyncio.gather(*(loop.run_in_executor(self.pool, _verdicts, trajectory, g) for g in groups))
        except BrokenProcessPool:
            raise RunInterrupted("a rules worker process ended unexpectedly (killed, or out of memory)") from None
        order = {m: i for i, m in enumerate(self.local.detectors)}
        return sorted(chain.from_iterable(found), key=lambda v: order[v.mode_id])

    def _start_pool(self) -> ProcessPoolExecutor:
        """The workers, forked by a server that has imported the detectors, so they start at once."""
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        # the server starts with the stop signals blocked, and so does every worker it forks
        # (the resource tracker first: starting it unblocks them)
        multiprocessing.resource_tracker.ensure_running()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return ProcessPoolExecutor(self.workers, context, initializer=_start,
                                   initargs=(self.path, self.local.detectors))

    def close(self) -> None:
        """End the workers, at once: a run stopped midway does not wait for the trajectories they hold
        (killed: they ignore SIGTERM)."""
        if self.pool is None:
            return
        for p in list(self.pool._processes.values()):  # no public way to end them before 3.14
            p.kill()
        # the pool's own thread reaps them: a second waiter would race it for their exit status
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None

    def __enter__(self) -> PooledRules:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
