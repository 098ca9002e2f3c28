"""The rule detectors on every core: worker processes compute, the runner's process stores.

The detectors are Python work on every character of every step, so one process uses one core
however many trajectories a run has. ``PooledRules`` hands each trajectory to a pool of worker
processes (one a core, each with its own read-only connection to the same database, and
SQLite's default page cache: a pass over the steps reuses no page), which read its steps and
run the detectors exactly as ``RulesLabeller`` does in process; the verdicts come back to the
runner, which stays the only writer and stores each trajectory's labels in one transaction as
before. An in-memory database (nothing to share) or one core runs them in process.

A run of one long trajectory would still be one core's work, so a trajectory of at least
``SPLIT_STEPS`` steps is cut by position into ``PARTS_PER_WORKER`` parts a worker: each part is
scanned by a worker of its own (reading only its steps, and a part after the first the run's
first steps if a detector needs them), sends back its detectors' state, and the runner joins
them in order (``rules._Detector.join``: what a part's first steps repeat or continue from the
part before is settled there), which gives what one scan finds. More parts than workers keep
both busy when one of them gets less of its core.

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
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from annotator.errors import RunInterrupted, StoreError
from annotator.labelling.rules import RulesLabeller, Scanned, _Detector
from annotator.labelling.verdicts import ModeVerdict
from annotator.models import Trajectory
from annotator.store import open_db_to_read
from annotator.store.db import SINGLE_PASS_CACHE_KIB
from annotator.taxonomy import Taxonomy

if TYPE_CHECKING:  # for annotations only
    from sqlite_utils import Database

T = TypeVar("T")

#: Steps from which a trajectory is scanned in parts, by several workers at once.
SPLIT_STEPS = 50_000
#: The parts of such a trajectory, per worker.
PARTS_PER_WORKER = 2

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
        _worker = RulesLabeller(detectors, db=open_db_to_read(path, SINGLE_PASS_CACHE_KIB))
    except StoreError as exc:
        _worker = exc


def _end_with_runner(sentinel: int) -> None:
    """End the worker when the runner is gone. A runner killed outright cannot end its workers,
    and they would wait for work forever: the queue they read stays open while any of them
    holds it. The sentinel is the worker's end of a pipe whose other end only the runner holds."""
    multiprocessing.connection.wait([sentinel])
    os._exit(1)


def _labeller() -> RulesLabeller:
    if isinstance(_worker, StoreError):
        raise _worker
    assert _worker is not None
    return _worker


def _verdicts(trajectory: Trajectory, mode_ids: Sequence[str]) -> list[ModeVerdict]:
    return _labeller().verdicts_for(trajectory, mode_ids)


def _part(trajectory: Trajectory, mode_ids: Sequence[str], start: int | None, stop: int | None) -> Scanned:
    return _labeller().part(trajectory, mode_ids, start, stop)


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
        lo, hi = self.db.execute("SELECT min(idx), max(idx) FROM steps WHERE trajectory_id = ?",
                                 [trajectory.id]).fetchone()
        try:
            if hi is None or hi - lo + 1 < self.split_steps:
                return await self._submit(_verdicts, trajectory, taxonomy.mode_ids)
            n = self.workers * PARTS_PER_WORKER
            cuts = [lo + (hi - lo + 1) * k // n for k in range(1, n)]
            parts = await asyncio.gather(*(self._submit(_part, trajectory, taxonomy.mode_ids, start, stop)
                                           for start, stop in zip([None, *cuts], [*cuts, None])))
        except BrokenProcessPool:
            raise RunInterrupted("a rules worker process ended unexpectedly (killed, or out of memory)") from None
        return self.local.verdicts_from(trajectory, parts)

    def _submit(self, fn: Callable[..., T], *args: object) -> asyncio.Future[T]:
        """``fn(*args)`` in a worker, as a future of the running loop that a cancelled task leaves
        alone. ``loop.run_in_executor`` would cancel the pool's own future with the task, and the
        pool cannot take that while its workers are ended: with a cancelled future still queued,
        its manager thread dies on setting "terminated abruptly" on it (``InvalidStateError``, a
        traceback on stderr) when ``close`` kills the workers of an interrupted run. Left alone,
        the pool fails its queued futures itself, and nobody waits for them any more."""
        assert self.pool is not None
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[T] = loop.create_future()

        def settle(done: Future[T]) -> None:
            if waiter.cancelled():
                return
            if done.cancelled():  # by ``close`` ending the pool under a running run
                waiter.cancel()
            elif (exc := done.exception()) is not None:
                waiter.set_exception(exc)
            else:
                waiter.set_result(done.result())

        def done_in_pool(done: Future[T]) -> None:  # in the pool's manager thread
            if not loop.is_closed():
                loop.call_soon_threadsafe(settle, done)

        self.pool.submit(fn, *args).add_done_callback(done_in_pool)
        return waiter

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
