"""The OpenAI Batch API path: ask everything at once at half price, then label from the cache.

The first-round requests that the cache does not hold are written as a JSONL file (``custom_id``
= the request's cache key), uploaded, and run as one batch. Its id is recorded in the run's
parameters before polling starts, so a run stopped while the batch runs resumes with
``--resume-batch ID`` instead of paying again. Downloaded answers go into the request cache;
then the ordinary runner labels every trajectory from it, with the same validation, grounding,
voting and storage as a live run (answers sent back for repair go to the live endpoint).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import orjson
from sqlite_utils import Database

from annotator.labelling.judge import LLMLabeller, PlannedRequest, uncached_plans
from annotator.labelling.llm import JudgeClient
from annotator.models import LabelRun
from annotator.store.requests import Response, store_responses
from annotator.store.runs import update_run

_DONE = {"completed", "failed", "expired", "cancelled"}


def batch_requests(db: Database, labeller: LLMLabeller, ids: Sequence[str]) -> dict[str, tuple[str, PlannedRequest]]:
    """The uncached first-round requests of ``ids`` by cache key, with their trajectory id."""
    return {p.key: (tid, p) for tid, p in uncached_plans(db, labeller, ids)[1]}


async def run_batch(
    db: Database,
    labeller: LLMLabeller,
    client: JudgeClient,
    run: LabelRun,
    ids: Sequence[str],
    *,
    batch_id: str | None = None,
    poll_seconds: float = 30.0,
    on_status: Callable[[str, str], None] | None = None,
) -> tuple[LabelRun, int]:
    """Submit (or resume) the batch, wait for it, cache its answers; returns (run, answers cached)."""
    wanted = batch_requests(db, labeller, ids)
    if batch_id is None:
        if not wanted:
            return run, 0
        s = labeller.settings
        lines = [
            orjson.dumps(
                {
                    "custom_id": key,
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": client.request_body(p.model, p.messages, s.temperature, labeller.schema,
                                                max_tokens=s.max_output_tokens),
                }
            )
            for key, (_, p) in wanted.items()
        ]
        batch_id = await client.submit_batch(b"\n".join(lines) + b"\n")
        run = run.model_copy(update={"params": run.params | {"batch_id": batch_id}})
        update_run(db, run)
    while True:
        status, output_file = await client.batch_status(batch_id)
        if on_status is not None:
            on_status(batch_id, status)
        if status in _DONE:
            break
        await asyncio.sleep(poll_seconds)
    stored = 0
    if output_file:
        for line in (await client.download(output_file)).splitlines():
            if not line.strip():
                continue
            item = orjson.loads(line)
            key = item.get("custom_id")
            response = item.get("response") or {}
            body = response.get("body") or {}
            if key not in wanted or response.get("status_code") != 200 or not body.get("choices"):
                continue
            tid, plan = wanted[key]
            usage = body.get("usage") or {}
            tin, tout = usage.get("prompt_tokens", 0) or 0, usage.get("completion_tokens", 0) or 0
            tcached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0) or 0
            price = labeller.prices[plan.model]
            store_responses(db, [Response(
                key, body["choices"][0]["message"].get("content") or "", plan.model, labeller.endpoint_host, tid,
                run.id, tin, tcached, tout, price.cost(tin, tout, tcached),
            )])
            labeller.usage.settle(0.0, price, tin, tout, tcached)
            stored += 1
    return run, stored
