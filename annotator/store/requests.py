"""Pre-labelling state: the judge's request cache and each run's per-trajectory outcome.

A response is written the moment it arrives, before anything is made of it (those that arrive
together share one short transaction), so an interrupted run loses at most the requests in
flight. A trajectory's labels and its ``run_items`` row are
written in one transaction (the runner writes a batch of trajectories in each): a trajectory is
either fully labelled by a run or not at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel
from sqlite_utils import Database

from annotator.label_sources import run_source
from annotator.models import Label, utcnow
from annotator.store.db import write
from annotator.store.labels import add_labels

ItemStatus = Literal["done", "failed"]


class RunItem(BaseModel):
    """What one run did with one trajectory."""

    trajectory_id: str
    status: ItemStatus
    error: str | None = None


def cached_response(db: Database, key: str) -> str | None:
    """The stored response text under ``key``, if any."""
    row = db.execute("SELECT response FROM llm_requests WHERE key = ?", [key]).fetchone()
    return None if row is None else row[0]


def cached_keys(db: Database, keys: Iterable[str]) -> set[str]:
    """Which of ``keys`` have a stored response."""
    keys = list(keys)
    found: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = keys[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        found.update(r[0] for r in db.execute(f"SELECT key FROM llm_requests WHERE key IN ({marks})", chunk))
    return found


class Spend(BaseModel):
    """What a run has sent and paid for, summed over the responses it paid for (`llm_spend`)."""

    requests: int = 0
    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    #: The same per judge model (a vote can use several).
    by_model: dict[str, "Spend"] = {}


class Response(NamedTuple):
    """One paid response as it is stored: the cached text under its key and what it cost the run."""

    key: str
    response: str
    model: str
    endpoint_host: str | None
    trajectory_id: str | None
    run_id: int | None
    tokens_in: int
    tokens_cached: int
    tokens_out: int
    cost_usd: float


def store_responses(db: Database, responses: Sequence[Response]) -> None:
    """Keep responses under their keys (first writer wins: a response is never replaced) and what
    the run that received each paid (always: two runs that sent the same request both paid), all
    in one transaction."""
    stamp = utcnow().isoformat()
    with write(db):
        db.conn.executemany(
            "INSERT OR IGNORE INTO llm_requests (key, trajectory_id, model, endpoint_host, response, tokens_in,"
            " tokens_cached, tokens_out, cost_usd, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(r.key, r.trajectory_id, r.model, r.endpoint_host, r.response, r.tokens_in, r.tokens_cached,
              r.tokens_out, r.cost_usd, r.run_id, stamp) for r in responses],
        )
        db.conn.executemany(
            "INSERT INTO llm_spend (key, run_id, model, tokens_in, tokens_cached, tokens_out, cost_usd, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(r.key, r.run_id, r.model, r.tokens_in, r.tokens_cached, r.tokens_out, r.cost_usd, stamp)
             for r in responses],
        )


def run_spend(db: Database, run_id: int) -> Spend:
    """A run's requests, tokens and cost over every session of it, from what it paid for."""
    by_model = {
        r[0]: Spend(requests=r[1], tokens_in=r[2], tokens_cached=r[3], tokens_out=r[4], cost_usd=r[5])
        for r in db.execute(
            "SELECT model, count(*), sum(tokens_in), sum(tokens_cached), sum(tokens_out), sum(cost_usd)"
            " FROM llm_spend WHERE run_id = ? GROUP BY model ORDER BY model",
            [run_id],
        )
    }
    parts = list(by_model.values())
    return Spend(requests=sum(p.requests for p in parts), tokens_in=sum(p.tokens_in for p in parts),
                 tokens_cached=sum(p.tokens_cached for p in parts), tokens_out=sum(p.tokens_out for p in parts),
                 cost_usd=sum(p.cost_usd for p in parts), by_model=by_model)


def prompt_secret(db: Database) -> bytes:
    """The database's key for tagging the judge's untrusted-data frame (made by migration 009)."""
    return bytes(db.execute("SELECT value FROM local_secrets WHERE name = 'prompt_frame'").fetchone()[0])


def finish_items(db: Database, run_id: int, items: Sequence[tuple[RunItem, Sequence[Label]]]) -> None:
    """Record a run's results for trajectories together with their labels, all in one transaction.

    Only a run's own annotator (``run:<id>``) and machine provenance are accepted, so that
    pre-labelling can never write, and so never overwrite, a person's label.
    """
    annotator = run_source(run_id)
    labels = [label for _, batch in items for label in batch]
    for label in labels:
        if label.annotator != annotator or label.provenance not in ("llm", "rules"):
            raise ValueError(f"a run may only store labels of {annotator} with machine provenance")
    stamp = utcnow().isoformat()
    with write(db):
        add_labels(db, labels)
        db.conn.executemany(
            "INSERT OR REPLACE INTO run_items (run_id, trajectory_id, status, error, updated_at)"
            " VALUES (?, ?, ?, ?, ?)",
            [(run_id, item.trajectory_id, item.status, item.error, stamp) for item, _ in items],
        )


def run_items(db: Database, run_id: int, status: ItemStatus | None = None) -> list[RunItem]:
    sql = "SELECT trajectory_id, status, error FROM run_items WHERE run_id = ?"
    params: list = [run_id]
    if status is not None:
        sql += " AND status = ?"
        params.append(status)
    return [
        RunItem(trajectory_id=r[0], status=r[1], error=r[2])
        for r in db.execute(sql + " ORDER BY trajectory_id", params)
    ]


def item_counts(db: Database, run_id: int) -> dict[str, int]:
    """How many trajectories a run has labelled ("done") and failed so far."""
    counts = {"done": 0, "failed": 0}
    for status, n in db.execute(
        "SELECT status, count(*) FROM run_items WHERE run_id = ? GROUP BY status", [run_id]
    ):
        counts[status] = n
    return counts


def verdict_counts(db: Database, run_id: int) -> dict[str, int]:
    """A run's suggestions by verdict, and how many "present" ones failed the grounding check."""
    counts = {"present": 0, "ungrounded": 0, "absent": 0, "unknown": 0}
    for verdict, grounded, n in db.execute(
        "SELECT verdict, grounded, count(*) FROM labels WHERE run_id = ? GROUP BY verdict, grounded", [run_id]
    ):
        counts[verdict] = counts.get(verdict, 0) + n
        if verdict == "present" and grounded == 0:
            counts["ungrounded"] += n
    return counts
