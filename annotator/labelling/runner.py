"""The bulk runner: label many trajectories with any Labeller, concurrently, resumably, honestly.

Trajectories are pulled by a bounded pool of workers (``concurrency``); the judge client bounds
requests in flight the same way. Each trajectory's labels are stored with its ``run_items`` row
in one transaction, under the run's own annotator ``run:<id>``, so a run interrupted anywhere
(Ctrl-C, ``kill -9``, a labeller's ``RunInterrupted``) leaves every trajectory either fully
labelled or untouched, and resuming skips the finished ones while the request cache answers
everything already asked. A trajectory that cannot be labelled gets a failure record, never a
partial or invalid label.

Finished trajectories are written in batches (:class:`Finished`: up to ``FLUSH_ITEMS`` in one
transaction, none waiting longer than ``FLUSH_S``): a transaction per trajectory took a seventh
of a bulk run's CPU. What waits is only labels made from responses already stored: a
``kill -9`` costs at most that batch's labelling again, answered from the cache on resume (a
rules run computes it again), never a request or a dollar; every other ending writes it first.

A run's requests, tokens and spend are not counters of the process: they are summed from the
responses it stored (each stored the moment it arrives, with its run and cost), so a session
killed anywhere loses no dollar from the record, and ``--max-cost`` holds for the run as a whole
across ``--resume``: a session starts with what the earlier ones spent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from contextlib import suppress

from pydantic import BaseModel
from sqlite_utils import Database

from annotator.errors import LabellingError, RunInterrupted
from annotator.heap import older_objects_frozen
from annotator.labelling.judge import BudgetExhausted, LLMLabeller, uncached_plans
from annotator.labelling.pricing import PROMPT_CACHE_MIN_TOKENS, Price, Usage
from annotator.labelling.verdicts import Labeller, ModeVerdict
from annotator.models import Label, LabelRun, utcnow
from annotator.store.requests import (
    RunItem,
    Spend,
    finish_items,
    item_counts,
    run_items,
    run_spend,
    verdict_counts,
)
from annotator.store.runs import update_run
from annotator.store.trajectories import get_trajectory
from annotator.taxonomy import Taxonomy

DEFAULT_CONCURRENCY = 16
#: Most finished trajectories written in one transaction, and longest a finished one waits.
FLUSH_ITEMS = 64
FLUSH_S = 0.25
#: New containers a run lets accumulate before the collector looks at them (Python's default 700).
GC_YOUNG = 20_000


class RunProgress(BaseModel):
    """Live counters of a run, handed to the progress callback after every trajectory."""

    total: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    sent: int = 0
    cached: int = 0
    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    stopped: str | None = None


class ModelEstimate(BaseModel):
    """One judge model's share of a dry run, with the prices it is reckoned at."""

    model: str
    requests: int
    tokens_in: int
    tokens_cached: int
    tokens_out: int
    cost_usd: float
    price: Price


class DryRun(BaseModel):
    """What a run would send, without sending it."""

    trajectories: int
    requests: int
    cached: int
    tokens_in: int
    #: Input tokens expected from the provider's prompt cache: the fixed system message of
    #: every request after a model's first, where it is long enough to be cached.
    tokens_cached: int = 0
    tokens_out: int
    cost_usd: float
    price_known: bool
    models: list[ModelEstimate] = []


class Finished:
    """A run's finished trajectories, written in batches: at ``FLUSH_ITEMS`` at once, otherwise
    every ``FLUSH_S`` while :meth:`keep_writing` runs, and by :meth:`write` at the run's end."""

    def __init__(self, db: Database, run_id: int):
        self.db, self.run_id = db, run_id
        self.items: list[tuple[RunItem, Sequence[Label]]] = []

    def add(self, item: RunItem, labels: Sequence[Label] = ()) -> None:
        self.items.append((item, labels))
        if len(self.items) >= FLUSH_ITEMS:
            self.write()

    def write(self) -> None:
        """Store what is waiting, in one transaction (kept waiting if the write fails)."""
        if self.items:
            finish_items(self.db, self.run_id, self.items)
            self.items = []

    async def keep_writing(self, done: asyncio.Event) -> None:
        """Write every ``FLUSH_S`` until ``done`` is set."""
        while not done.is_set():
            with suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), FLUSH_S)
            self.write()


def begin_usage(db: Database, run: LabelRun, max_cost: float | None) -> Usage:
    """The spend a session of ``run`` starts from: everything earlier sessions stored, so a
    budget covers the run across resumes."""
    spent = run_spend(db, run.id) if run.id is not None else Spend()
    return Usage(tokens_in=spent.tokens_in, tokens_cached=spent.tokens_cached, tokens_out=spent.tokens_out,
                 cost_usd=spent.cost_usd, max_cost=max_cost)


def to_labels(verdicts: Sequence[ModeVerdict], run: LabelRun, trajectory_id: str, taxonomy_hash: str) -> list[Label]:
    """A run's verdicts as suggestion labels under the run's annotator, with one timestamp:
    they are written together."""
    annotator, created_at = run.annotator, utcnow()
    return [
        Label(
            trajectory_id=trajectory_id,
            mode_id=v.mode_id,
            annotator=annotator,
            verdict=v.verdict,
            onset_step=v.onset_step,
            evidence_steps=v.evidence_steps,
            quote=v.quote,
            rationale=v.rationale,
            confidence=v.confidence,
            provenance=run.kind,
            run_id=run.id,
            grounded=v.grounded,
            taxonomy_hash=taxonomy_hash,
            extra={"votes": v.votes} if v.votes else {},
            created_at=created_at,
        )
        for v in verdicts
    ]


def pending(db: Database, run: LabelRun, ids: Sequence[str]) -> list[str]:
    """The trajectories of ``ids`` that ``run`` has not labelled yet (failed ones are retried)."""
    done = {i.trajectory_id for i in run_items(db, run.id, "done")} if run.id is not None else set()
    return [i for i in ids if i not in done]


def dry_run(db: Database, labeller: LLMLabeller, ids: Sequence[str]) -> DryRun:
    """Count the first-round requests, their tokens and cost; nothing is sent.

    Answers sent back for repair are not foreseeable and not counted.
    """
    requests, todo = uncached_plans(db, labeller, ids)
    models = labeller.settings.models
    per = {m: ModelEstimate(model=m, requests=0, tokens_in=0, tokens_cached=0, tokens_out=0, cost_usd=0.0,
                            price=labeller.prices[m]) for m in models}
    prefix = {m: labeller.fixed_prefix_tokens(m) for m in models}
    for _, p in todo:
        est = per[p.model]
        cached = prefix[p.model] if est.requests and prefix[p.model] >= PROMPT_CACHE_MIN_TOKENS else 0
        i, o, c = labeller.estimate(p.model, p.tokens_in, cached)
        est.requests += 1
        est.tokens_in, est.tokens_cached, est.tokens_out, est.cost_usd = (
            est.tokens_in + i, est.tokens_cached + cached, est.tokens_out + o, est.cost_usd + c)
    known = all(labeller.prices[m].known for m in models)
    shares = list(per.values())
    return DryRun(
        trajectories=len(ids), requests=requests, cached=requests - len(todo),
        tokens_in=sum(e.tokens_in for e in shares), tokens_cached=sum(e.tokens_cached for e in shares),
        tokens_out=sum(e.tokens_out for e in shares), cost_usd=sum(e.cost_usd for e in shares),
        price_known=known, models=shares,
    )


async def run_labeller(
    db: Database,
    labeller: Labeller,
    taxonomy: Taxonomy,
    run: LabelRun,
    ids: Sequence[str],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    usage: Usage | None = None,
    on_progress: Callable[[RunProgress], None] | None = None,
) -> LabelRun:
    """Label ``ids`` (those the run has not finished) and return the run with its final status."""
    if run.id is None:
        raise ValueError("the run must be stored first")
    todo = pending(db, run, ids)
    usage = usage or begin_usage(db, run, None)
    base_cached = run.counts.get("cached", 0)  # cache hits cost nothing and are not stored per run
    progress = RunProgress(total=len(ids), skipped=len(ids) - len(todo))
    queue: asyncio.Queue[str] = asyncio.Queue()
    for tid in todo:
        queue.put_nowait(tid)
    tax_hash = taxonomy.version_hash
    finished, all_done = Finished(db, run.id), asyncio.Event()

    def report() -> None:
        progress.sent = getattr(labeller, "sent", 0)
        progress.cached = getattr(labeller, "cached", 0)
        progress.tokens_in, progress.tokens_cached = usage.tokens_in, usage.tokens_cached
        progress.tokens_out, progress.cost_usd = usage.tokens_out, usage.cost_usd
        if on_progress is not None:
            on_progress(progress)

    async def worker() -> None:
        while progress.stopped is None and not queue.empty():
            tid = queue.get_nowait()
            traj = get_trajectory(db, tid, with_steps=labeller.needs_steps)
            try:
                verdicts = await labeller.label(traj, taxonomy)
            except BudgetExhausted as exc:
                progress.stopped = str(exc)
                return
            except LabellingError as exc:
                finished.add(RunItem(trajectory_id=tid, status="failed", error=str(exc)))
                progress.failed += 1
            else:
                finished.add(RunItem(trajectory_id=tid, status="done"), to_labels(verdicts, run, tid, tax_hash))
                progress.done += 1
            report()

    async def workers() -> None:
        try:
            await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(todo) or 1)))))
        finally:
            all_done.set()

    def close(status: str) -> LabelRun:
        """Write the finished trajectories still waiting, then record the run as ``status``
        (recorded even when that write fails)."""
        try:
            finished.write()
        finally:
            spent = run_spend(db, run.id)
            final = run.model_copy(
                update={
                    "status": status,
                    "counts": item_counts(db, run.id)
                    | verdict_counts(db, run.id)
                    | {"sent": spent.requests, "cached": base_cached + progress.cached,
                       "tokens_cached": spent.tokens_cached},
                    "tokens_in": spent.tokens_in,
                    "tokens_out": spent.tokens_out,
                    "cost_usd": spent.cost_usd,
                    "finished_at": utcnow(),
                    "params": run.params | ({"stopped": progress.stopped} if progress.stopped else {}),
                }
            )
            update_run(db, final)
        return final

    report()
    try:
        # Every request allocates a few hundred containers (the client's request and response
        # objects, tasks, models) that live until its answer: the collections they set off
        # walked the whole process, and the young objects of the 64 requests in flight, each
        # time: a seventh of the runner's CPU at 64 in flight.
        with older_objects_frozen(young=GC_YOUNG):
            await asyncio.gather(workers(), finished.keep_writing(all_done))
    except (asyncio.CancelledError, KeyboardInterrupt, RunInterrupted):
        report()
        close("interrupted")
        raise
    except Exception:
        close("failed")
        raise
    report()
    return close("interrupted" if progress.stopped else "completed")
