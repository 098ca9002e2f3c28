"""Trajectories and their steps: saving an import, listing, paging steps and full-text search.

A stub (a trajectory known only from a label export) is stored as its row alone: ``n_steps``
keeps the original's length, so onsets keep their place, and the step readers below answer
with placeholder steps instead of storing one row per original step (an export of 20,000
trajectories would otherwise write two million rows of the same sentence, and their index).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field
from sqlite_utils import Database

from annotator.errors import NotFound
from annotator.models import Outcome, Step, Trajectory
from annotator.store._json import dumps, loads
from annotator.store.db import write

SaveResult = Literal["imported", "updated", "unchanged"]

#: Characters of a step's content a preview row carries (the step list shows one line);
#: ``step_heads`` stores this many (migration 003_tui).
PREVIEW_CHARS = 240

#: zlib level for the raw originals: level 1 is several times faster than the default and
#: still shrinks log text about fourfold; the raw bytes are read rarely (provenance, export).
RAW_COMPRESSION = 1


class TrajectorySummary(BaseModel):
    """A trajectory without its steps and raw bytes: what lists and queues show."""

    id: str
    source_format: str
    source_path: str | None = None
    title: str | None = None
    system: str | None = None
    model: str | None = None
    benchmark: str | None = None
    task: str | None = None
    outcome: Outcome = "unknown"
    score: float | None = None
    n_steps: int = 0
    agents: list[str] = Field(default_factory=list)
    imported_at: datetime | None = None
    metadata: dict = Field(default_factory=dict)


class StepPreview(BaseModel):
    """One line of the step list: enough to draw it without loading the step's full content."""

    index: int
    agent: str | None = None
    kind: str
    tool_name: str | None = None
    preview: str
    length: int


class SearchHit(BaseModel):
    """A step whose content matches a full-text query."""

    trajectory_id: str
    index: int
    snippet: str


class TrajectoryFilter(BaseModel):
    """Which trajectories a listing selects; every field left None selects everything."""

    ids: Sequence[str] | None = None
    system: str | None = None
    model: str | None = None
    benchmark: str | None = None
    outcome: Outcome | None = None
    source_format: str | None = None
    search: str | None = Field(None, description="Full-text query over step content.")
    review_status: str | None = Field(None, description="Status for `annotator` (not_started counts none).")
    annotator: str | None = None
    imported_after: datetime | None = None
    imported_before: datetime | None = None
    tag: str | None = Field(None, description="A value the trajectory's metadata 'tags' list holds, or an audit"
                                              " sample's tag.")


def save_trajectory(db: Database, traj: Trajectory) -> SaveResult:
    """Insert or replace a trajectory and its steps in one transaction.

    Re-importing identical content is a no-op ("unchanged"); changed content replaces the
    steps but keeps every label, since labels are keyed by trajectory id and mode.
    """
    with write(db):
        row = db.execute(
            "SELECT content_hash FROM trajectories WHERE id = ?", [traj.id]
        ).fetchone()
        if row is not None and row[0] == traj.content_hash:
            return "unchanged"
        if row is not None:
            _delete_steps(db, traj.id)
        values = _trajectory_values(traj, len(traj.steps))
        # An upsert, not INSERT OR REPLACE: a replace deletes the row first, and the foreign keys
        # would cascade that delete to every label and review of the trajectory.
        updates = ", ".join(f"{c} = excluded.{c}" for c in _TRAJECTORY_COLS if c != "id")
        db.execute(f"{_INSERT_TRAJECTORY} ON CONFLICT (id) DO UPDATE SET {updates}", values)
        db.conn.executemany(
            "INSERT INTO steps (trajectory_id, idx, id, agent, role, recipient, kind, content, tool_name,"
            " tool_args, call_id, link, parent, grp, timestamp, tokens_in, tokens_out, attributes, raw)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (_step_row(traj.id, s) for s in traj.steps),
        )
        db.execute(
            "INSERT INTO steps_fts(rowid, content) SELECT rowid, content FROM steps WHERE trajectory_id = ?",
            [traj.id],
        )
    return "updated" if row is not None else "imported"


_TRAJECTORY_COLS = (
    "id", "schema_version", "source_format", "source_path", "source_ref", "title", "system", "model", "benchmark",
    "task", "outcome", "score", "metadata", "raw", "content_hash", "imported_at", "n_steps", "agents",
)
_INSERT_TRAJECTORY = (
    f"INSERT INTO trajectories ({', '.join(_TRAJECTORY_COLS)}) VALUES ({', '.join('?' for _ in _TRAJECTORY_COLS)})"
)


def _trajectory_values(traj: Trajectory, n_steps: int) -> list:
    """The trajectories row of ``traj``, in ``_TRAJECTORY_COLS`` order."""
    return [
        traj.id, traj.schema_version, traj.source_format, traj.source_path, traj.source_ref, traj.title,
        traj.system, traj.model, traj.benchmark, traj.task, traj.outcome, traj.score, dumps(traj.metadata),
        zlib.compress(traj.raw, RAW_COMPRESSION) if traj.raw is not None else None, traj.content_hash,
        traj.imported_at.isoformat(), n_steps, dumps(sorted({s.agent for s in traj.steps if s.agent})),
    ]


#: Content hash of a stub: never equal to a real trajectory's, so a real import replaces it.
STUB_HASH = "label-export-stub"
#: What each placeholder step of a stub says.
PLACEHOLDER = "(step not included in the label export)"


def save_stubs(db: Database, stubs: Sequence[tuple[Trajectory, int]]) -> list[SaveResult]:
    """Store (trajectory, original number of steps) stubs whose ids are new, with one executemany.

    A stub never replaces a stored trajectory (real or stub): those, and repeats of an id in
    ``stubs``, are "unchanged". The result is one status per stub, in order.
    """
    with write(db):
        known = set(existing_hashes(db, [t.id for t, _ in stubs]))
        out: list[SaveResult] = []
        rows = []
        for traj, n_steps in stubs:
            if traj.id in known:
                out.append("unchanged")
                continue
            known.add(traj.id)
            out.append("imported")
            values = _trajectory_values(traj, n_steps)
            values[_TRAJECTORY_COLS.index("content_hash")] = STUB_HASH
            rows.append(values)
        db.conn.executemany(_INSERT_TRAJECTORY, rows)
    return out


def _stub_steps(db: Database, traj_id: str, start: int, limit: int | None) -> list[Step]:
    """Placeholder steps ``start`` .. ``start + limit`` if ``traj_id`` is a stub, else none.

    The one fallback behind every step reader, so a stub reads the same everywhere.
    """
    row = db.execute(
        "SELECT n_steps FROM trajectories WHERE id = ? AND content_hash = ?", [traj_id, STUB_HASH]
    ).fetchone()
    if row is None:
        return []
    end = row[0] if limit is None else min(row[0], start + limit)
    return [
        Step(index=i, id=f"{traj_id}:{i}", kind="event", content=PLACEHOLDER) for i in range(max(start, 0), end)
    ]


def _step_row(traj_id: str, s: Step) -> tuple:
    return (
        traj_id,
        s.index,
        s.id or f"{traj_id}:{s.index}",
        s.agent,
        s.role,
        s.recipient,
        s.kind,
        s.content,
        s.tool_name,
        s.tool_args,
        s.call_id,
        s.link,
        s.parent,
        s.group,
        s.timestamp.isoformat() if s.timestamp else None,
        s.tokens_in,
        s.tokens_out,
        dumps(s.attributes) if s.attributes else None,
        dumps(s.raw) if s.raw is not None else None,
    )


def _delete_steps(db: Database, traj_id: str) -> None:
    db.execute(
        "INSERT INTO steps_fts(steps_fts, rowid, content)"
        " SELECT 'delete', rowid, content FROM steps WHERE trajectory_id = ?",
        [traj_id],
    )
    db.execute("DELETE FROM steps WHERE trajectory_id = ?", [traj_id])


def existing_hashes(db: Database, ids: Iterable[str]) -> dict[str, str]:
    """Content hashes of the given ids that are already stored (for fast idempotent re-import)."""
    ids = list(ids)
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for tid, h in db.execute(
            f"SELECT id, content_hash FROM trajectories WHERE id IN ({marks})", chunk
        ).fetchall():
            out[tid] = h
    return out


_SUMMARY_COLS = (
    "id, source_format, source_path, title, system, model, benchmark, task, outcome, score,"
    " n_steps, agents, imported_at, metadata"
)


def _summary(row: Sequence) -> TrajectorySummary:
    return TrajectorySummary(
        id=row[0],
        source_format=row[1],
        source_path=row[2],
        title=row[3],
        system=row[4],
        model=row[5],
        benchmark=row[6],
        task=row[7],
        outcome=row[8],
        score=row[9],
        n_steps=row[10],
        agents=loads(row[11], []),
        imported_at=row[12],
        metadata=loads(row[13], {}),
    )


def list_trajectories(db: Database, flt: TrajectoryFilter | None = None) -> list[TrajectorySummary]:
    """Trajectories matching the filter, in a stable order (system, model, id)."""
    flt = flt or TrajectoryFilter()
    where, params = _where(flt)
    sql = f"SELECT {_SUMMARY_COLS} FROM trajectories t"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY coalesce(system, ''), coalesce(model, ''), id"
    return [_summary(r) for r in db.execute(sql, params).fetchall()]


def _where(flt: TrajectoryFilter) -> tuple[list[str], list]:
    where: list[str] = []
    params: list = []
    for col in ("system", "model", "benchmark", "outcome", "source_format"):
        value = getattr(flt, col)
        if value is not None:
            where.append(f"t.{col} = ?")
            params.append(value)
    if flt.ids is not None:
        ids = list(flt.ids)
        where.append(f"t.id IN ({', '.join('?' for _ in ids)})" if ids else "0")
        params.extend(ids)
    if flt.imported_after is not None:
        where.append("t.imported_at >= ?")
        params.append(flt.imported_after.isoformat())
    if flt.imported_before is not None:
        where.append("t.imported_at < ?")
        params.append(flt.imported_before.isoformat())
    if flt.search:
        where.append(
            "t.id IN (SELECT s.trajectory_id FROM steps s JOIN steps_fts f ON f.rowid = s.rowid"
            " WHERE steps_fts MATCH ?)"
        )
        params.append(fts_query(flt.search))
    if flt.review_status is not None:
        if flt.annotator is None:
            raise ValueError("review_status needs an annotator")
        if flt.review_status == "not_started":
            where.append(
                "NOT EXISTS (SELECT 1 FROM review_state r WHERE r.trajectory_id = t.id"
                " AND r.annotator = ? AND r.status != 'not_started')"
            )
            params.append(flt.annotator)
        else:
            where.append(
                "EXISTS (SELECT 1 FROM review_state r WHERE r.trajectory_id = t.id"
                " AND r.annotator = ? AND r.status = ?)"
            )
            params.extend([flt.annotator, flt.review_status])
    if flt.tag is not None:
        # A tag is a value of the metadata's 'tags' list or the name of an audit sample (migration 005).
        where.append("(EXISTS (SELECT 1 FROM json_each(t.metadata, '$.tags') j WHERE j.value = ?)"
                     " OR EXISTS (SELECT 1 FROM sample_items si WHERE si.trajectory_id = t.id AND si.tag = ?))")
        params.extend([flt.tag, flt.tag])
    return where, params


def fts_query(text: str) -> str:
    """Turn what a user typed into a safe FTS5 query: every word a quoted term, all required."""
    words = re.findall(r"\w+", text)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words) or '""'


def get_summary(db: Database, traj_id: str) -> TrajectorySummary:
    row = db.execute(f"SELECT {_SUMMARY_COLS} FROM trajectories WHERE id = ?", [traj_id]).fetchone()
    if row is None:
        raise NotFound(f"no trajectory with id {traj_id!r}")
    return _summary(row)


def resolve_id(db: Database, ref: str) -> str:
    """The full id for an exact id or a unique prefix of one (what users type at the CLI)."""
    if db.execute("SELECT 1 FROM trajectories WHERE id = ?", [ref]).fetchone():
        return ref
    rows = db.execute(
        "SELECT id FROM trajectories WHERE substr(id, 1, ?) = ? LIMIT 6", [len(ref), ref]
    ).fetchall()
    if len(rows) == 1:
        return rows[0][0]
    if not rows:
        raise NotFound(f"no trajectory with id {ref!r}")
    raise NotFound(f"{ref!r} is ambiguous: " + ", ".join(r[0] for r in rows[:5]) + " ...")


def get_trajectory(db: Database, traj_id: str, *, with_steps: bool = True, with_raw: bool = False) -> Trajectory:
    """The whole trajectory; steps and raw bytes only when asked (they can be large)."""
    row = db.execute(
        "SELECT id, schema_version, source_format, source_path, source_ref, title, system, model,"
        " benchmark, task, outcome, score, metadata, raw, content_hash, imported_at"
        " FROM trajectories WHERE id = ?",
        [traj_id],
    ).fetchone()
    if row is None:
        raise NotFound(f"no trajectory with id {traj_id!r}")
    return Trajectory(
        id=row[0],
        schema_version=row[1],
        source_format=row[2],
        source_path=row[3],
        source_ref=row[4],
        title=row[5],
        system=row[6],
        model=row[7],
        benchmark=row[8],
        task=row[9],
        outcome=row[10],
        score=row[11],
        metadata=loads(row[12], {}),
        raw=zlib.decompress(row[13]) if with_raw and row[13] is not None else None,
        content_hash=row[14],
        imported_at=row[15],
        steps=get_steps(db, traj_id) if with_steps else [],
    )


_STEP_COLS = (
    "idx, id, agent, role, recipient, kind, content, tool_name, tool_args, call_id, link, parent,"
    " grp, timestamp, tokens_in, tokens_out, attributes, raw"
)


def _step(row: Sequence) -> Step:
    return Step(
        index=row[0],
        id=row[1],
        agent=row[2],
        role=row[3],
        recipient=row[4],
        kind=row[5],
        content=row[6],
        tool_name=row[7],
        tool_args=row[8],
        call_id=row[9],
        link=row[10],
        parent=row[11],
        group=row[12],
        timestamp=row[13],
        tokens_in=row[14],
        tokens_out=row[15],
        attributes=loads(row[16], {}),
        raw=loads(row[17]),
    )


def get_steps(db: Database, traj_id: str, start: int = 0, limit: int | None = None) -> list[Step]:
    """Steps ``start`` .. ``start + limit`` in order (all from ``start`` when limit is None)."""
    rows = db.execute(
        f"SELECT {_STEP_COLS} FROM steps WHERE trajectory_id = ? AND idx >= ? ORDER BY idx LIMIT ?",
        [traj_id, start, -1 if limit is None else limit],
    ).fetchall()
    if not rows:
        return _stub_steps(db, traj_id, start, limit)
    return [_step(r) for r in rows]


def get_step(db: Database, traj_id: str, index: int) -> Step:
    row = db.execute(
        f"SELECT {_STEP_COLS} FROM steps WHERE trajectory_id = ? AND idx = ?", [traj_id, index]
    ).fetchone()
    if row is None:
        stub = _stub_steps(db, traj_id, index, 1)
        if stub:
            return stub[0]
        raise NotFound(f"trajectory {traj_id!r} has no step {index}")
    return _step(row)


def count_steps(db: Database, traj_id: str) -> int:
    row = db.execute("SELECT n_steps FROM trajectories WHERE id = ?", [traj_id]).fetchone()
    if row is None:
        raise NotFound(f"no trajectory with id {traj_id!r}")
    return row[0]


def step_previews(db: Database, traj_id: str, start: int = 0, limit: int = 200) -> list[StepPreview]:
    """One-line previews of a window of steps, from ``step_heads`` (never the step contents)."""
    rows = db.execute(
        "SELECT idx, agent, kind, tool_name, preview, length FROM step_heads"
        " WHERE trajectory_id = ? AND idx >= ? ORDER BY idx LIMIT ?",
        [traj_id, start, limit],
    ).fetchall()
    if not rows:
        return [
            StepPreview(index=s.index, kind=s.kind, preview=s.content, length=len(s.content))
            for s in _stub_steps(db, traj_id, start, limit)
        ]
    return [
        StepPreview(index=r[0], agent=r[1], kind=r[2], tool_name=r[3], preview=r[4], length=r[5])
        for r in rows
    ]


def search_steps(
    db: Database, text: str, trajectory_id: str | None = None, limit: int = 100
) -> list[SearchHit]:
    """Steps whose content contains every word of ``text``, best matches first."""
    sql = (
        "SELECT s.trajectory_id, s.idx, snippet(steps_fts, 0, '«', '»', '…', 12) FROM steps_fts"
        " JOIN steps s ON s.rowid = steps_fts.rowid WHERE steps_fts MATCH ?"
    )
    params: list = [fts_query(text)]
    if trajectory_id is not None:
        sql += " AND s.trajectory_id = ?"
        params.append(trajectory_id)
    sql += " ORDER BY rank LIMIT ?"
    params.append(limit)
    return [SearchHit(trajectory_id=r[0], index=r[1], snippet=r[2]) for r in db.execute(sql, params)]


def distinct_values(db: Database, column: Literal["system", "model", "benchmark", "source_format"]) -> list[str]:
    """The values a filter on ``column`` can take."""
    return [
        r[0]
        for r in db.execute(
            f"SELECT DISTINCT {column} FROM trajectories WHERE {column} IS NOT NULL ORDER BY {column}"
        )
    ]


def delete_trajectory(db: Database, traj_id: str) -> None:
    """Remove a trajectory with its steps, labels and review state."""
    with write(db):
        _delete_steps(db, traj_id)
        for table in ("label_state", "suggestion_decisions", "review_state", "review_events", "attributions"):
            db.execute(f"DELETE FROM {table} WHERE trajectory_id = ?", [traj_id])
        db.execute("DELETE FROM labels WHERE trajectory_id = ?", [traj_id])
        db.execute("DELETE FROM trajectories WHERE id = ?", [traj_id])
