"""Label runs: the record of each pre-labelling run (settings, counts, tokens, cost; never a key)."""

from __future__ import annotations

from sqlite_utils import Database

from annotator.errors import NotFound
from annotator.models import SCHEMA_VERSION, LabelRun
from annotator.store._json import dumps
from annotator.store.db import write
from annotator.store.rows import decode, decode_one, json_columns, select

_COLS = select(LabelRun)
_DECODE = json_columns("params", "counts")


def create_run(db: Database, run: LabelRun) -> LabelRun:
    """Store a new run; returns it with its id."""
    with write(db):
        cur = db.execute(
            "INSERT INTO label_runs (schema_version, kind, model, endpoint_host, prompt_name, prompt_hash,"
            " params, taxonomy_hash, status, counts, tokens_in, tokens_out, cost_usd, started_at, finished_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                SCHEMA_VERSION,
                run.kind,
                run.model,
                run.endpoint_host,
                run.prompt_name,
                run.prompt_hash,
                dumps(run.params),
                run.taxonomy_hash,
                run.status,
                dumps(run.counts),
                run.tokens_in,
                run.tokens_out,
                run.cost_usd,
                run.started_at.isoformat(),
                run.finished_at.isoformat() if run.finished_at else None,
            ],
        )
    return run.model_copy(update={"id": cur.lastrowid})


def update_run(db: Database, run: LabelRun) -> None:
    """Write a run's status, counts, usage and end time."""
    if run.id is None:
        raise ValueError("run has no id")
    with write(db):
        db.execute(
            "UPDATE label_runs SET status = ?, counts = ?, tokens_in = ?, tokens_out = ?, cost_usd = ?,"
            " finished_at = ?, params = ? WHERE id = ?",
            [
                run.status,
                dumps(run.counts),
                run.tokens_in,
                run.tokens_out,
                run.cost_usd,
                run.finished_at.isoformat() if run.finished_at else None,
                dumps(run.params),
                run.id,
            ],
        )


def get_run(db: Database, run_id: int) -> LabelRun:
    run = decode_one(db.execute(f"SELECT {_COLS} FROM label_runs WHERE id = ?", [run_id]), LabelRun, _DECODE)
    if run is None:
        raise NotFound(f"no label run {run_id}")
    return run


def list_runs(db: Database) -> list[LabelRun]:
    return decode(db.execute(f"SELECT {_COLS} FROM label_runs ORDER BY id"), LabelRun, _DECODE)
