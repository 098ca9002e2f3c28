"""Audit samples (migration 007): the design of each and its trajectories' inclusion probabilities."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlite_utils import Database

from annotator.errors import NotFound, ReportError
from annotator.store._json import dumps, loads
from annotator.store.db import write


@dataclass(frozen=True)
class Sample:
    """How a sample was drawn: from which source, stratified by what, each stratum's
    (population, drawn) sizes, and the trajectory filters in force."""

    tag: str
    source: str
    stratify: str | None
    seed: int
    size: int
    population: int
    strata: dict[str, tuple[int, int]]
    filters: dict[str, str]
    created_at: datetime


@dataclass(frozen=True)
class SampleItem:
    trajectory_id: str
    stratum: str
    inclusion_probability: float


def save_sample(db: Database, sample: Sample, items: list[SampleItem]) -> None:
    """Store a new sample and its trajectories in one transaction; a tag names one sample only."""
    with write(db):
        if db.execute("SELECT 1 FROM samples WHERE tag = ?", [sample.tag]).fetchone():
            raise ReportError(f"a sample tagged {sample.tag!r} exists already; choose another --tag")
        db.execute(
            "INSERT INTO samples (tag, source, stratify, seed, size, population, strata, filters, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [sample.tag, sample.source, sample.stratify, sample.seed, sample.size, sample.population,
             dumps({k: list(v) for k, v in sample.strata.items()}), dumps(sample.filters),
             sample.created_at.isoformat()],
        )
        db.conn.executemany(
            "INSERT INTO sample_items (tag, trajectory_id, stratum, inclusion_probability) VALUES (?, ?, ?, ?)",
            [(sample.tag, i.trajectory_id, i.stratum, i.inclusion_probability) for i in items],
        )


def _sample(row: tuple) -> Sample:
    return Sample(tag=row[0], source=row[1], stratify=row[2], seed=row[3], size=row[4], population=row[5],
                  strata={k: (int(v[0]), int(v[1])) for k, v in loads(row[6], {}).items()},
                  filters=loads(row[7], {}), created_at=datetime.fromisoformat(row[8]))


_COLUMNS = "tag, source, stratify, seed, size, population, strata, filters, created_at"


def get_sample(db: Database, tag: str) -> Sample:
    """The sample named ``tag``; NotFound if there is none."""
    row = db.execute(f"SELECT {_COLUMNS} FROM samples WHERE tag = ?", [tag]).fetchone()
    if row is None:
        raise NotFound(f"no audit sample tagged {tag!r} (draw one with `mast sample`)")
    return _sample(row)


def latest_sample(db: Database, source: str) -> Sample | None:
    """The newest sample drawn from ``source``, if any."""
    row = db.execute(
        f"SELECT {_COLUMNS} FROM samples WHERE source = ? ORDER BY created_at DESC, rowid DESC LIMIT 1", [source]
    ).fetchone()
    return _sample(row) if row else None


def sample_items(db: Database, tag: str) -> list[SampleItem]:
    """The trajectories of sample ``tag`` with their stratum and inclusion probability, by id."""
    rows = db.execute(
        "SELECT trajectory_id, stratum, inclusion_probability FROM sample_items WHERE tag = ? ORDER BY trajectory_id",
        [tag],
    )
    return [SampleItem(*r) for r in rows]
