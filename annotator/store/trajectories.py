"""Trajectory rows: saving an import (and a label export's stubs), listing with filters, reading one.

A stub is stored as its row alone, with the original's number of steps and ``STUB_HASH`` as
its content hash (so a real import of the same trajectory replaces it); ``store.steps``
answers for its steps with placeholders. Steps are written here, with their trajectory, in
one transaction (or, for an import, in short ones: ``store.staging``); they are read through
``store.steps`` and searched through ``store.search``. Rows an import has not published yet
(``pending`` set) are skipped by every reader here.
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from sqlite_utils import Database

from annotator.errors import NotFound
from annotator.models import Step, Trajectory
from annotator.store import verdict_summary
from annotator.store._json import dumps
from annotator.store.binding import bound
from annotator.store.db import write
from annotator.store.rows import decode, decode_one, each, json_columns, one_of, select
from annotator.store.search import fts_query
from annotator.store.step_index import IndexedBatches, index_steps_after, last_step_rowid
from annotator.store.steps import STUB_HASH, get_steps
from annotator.views import TrajectoryFilter, TrajectorySummary

SaveResult = Literal["imported", "updated", "unchanged"]

#: zlib level for the raw originals: level 1 is several times faster than the default and
#: still shrinks log text about fourfold; the raw bytes are read rarely (provenance, export).
RAW_COMPRESSION = 1


def save_trajectory(db: Database, traj: Trajectory) -> SaveResult:
    """Insert or replace a trajectory and its steps in one transaction.

    Re-importing identical content is a no-op ("unchanged"); changed content replaces the
    steps but keeps every label, since labels are keyed by trajectory id and mode.
    """
    with write(db):
        row = db.execute(
            "SELECT content_hash FROM trajectories WHERE id = ? AND pending IS NULL", [traj.id]
        ).fetchone()
        if row is not None and row[0] == traj.content_hash:
            return "unchanged"
        if row is not None:
            delete_steps(db, traj.id)
        upsert_trajectory(db, trajectory_values(traj, len(traj.steps)))
        write_steps(db, traj.id, traj.steps)
    return "updated" if row is not None else "imported"


#: Steps written per statement (and between two chances for a long writer to commit).
STEP_CHUNK = 200


def write_steps(db: Database, traj_id: str, steps: Sequence[Step], batches: IndexedBatches | None = None) -> None:
    """Insert the steps of ``traj_id`` and their full-text rows, ``STEP_CHUNK`` at a time. An
    import gives its ``batches``: each chunk is a point where it may commit (``batches.point``),
    and the full-text rows are written at the commit (``store.step_index``)."""
    for start in range(0, len(steps), STEP_CHUNK):
        if batches is not None:
            batches.before_steps()
        else:
            before = last_step_rowid(db)
        db.conn.executemany(_INSERT_STEP, (bound(_step_row(traj_id, s)) for s in steps[start:start + STEP_CHUNK]))
        if batches is not None:
            batches.point()
        else:
            index_steps_after(db, before)


def set_links(db: Database, traj_id: str, links: Iterable[tuple[int, int]]) -> None:
    """Point steps already written at their pair: (step index, index of the step it links to)."""
    db.conn.executemany("UPDATE steps SET link = ? WHERE trajectory_id = ? AND idx = ?",
                        ((link, traj_id, idx) for idx, link in links))


_INSERT_STEP = (
    "INSERT INTO steps (trajectory_id, idx, id, agent, role, recipient, kind, content, tool_name,"
    " tool_args, call_id, link, parent, grp, timestamp, tokens_in, tokens_out, attributes, raw)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def upsert_trajectory(db: Database, values: list, pending: str | None = None) -> None:
    """Insert or update a trajectories row (values in ``_TRAJECTORY_COLS`` order), ``pending``
    naming the import that has not published it yet (None: visible).

    An upsert, not INSERT OR REPLACE: a replace deletes the row first, and the foreign keys
    would cascade that delete to every label and review of the trajectory.
    """
    updates = ", ".join(f"{c} = excluded.{c}" for c in (*_TRAJECTORY_COLS[1:], "pending"))
    db.execute(f"{_INSERT_TRAJECTORY} ON CONFLICT (id) DO UPDATE SET {updates}", [*values, pending])


#: A moved step's id: one the source file gave stays; one made up from the trajectory id and
#: the index (see ``_step_row``) is made up again from the new id, so no step keeps the name
#: of the row an import wrote it under. Parameters: ?1 the new id, ?2 the old one.
_MOVED_ID = "id = CASE WHEN id = ?2 || ':' || idx THEN ?1 || ':' || idx ELSE id END"


def move_version(db: Database, source_id: str, traj_id: str) -> None:
    """Replace trajectory ``traj_id``'s steps and fields by those of the row ``source_id`` (a new
    version written aside), and drop that row; labels and reviews of ``traj_id`` stay."""
    delete_steps(db, traj_id)
    db.execute(f"UPDATE steps SET trajectory_id = ?1, {_MOVED_ID} WHERE trajectory_id = ?2", [traj_id, source_id])
    cols = ", ".join(_TRAJECTORY_COLS[1:])
    db.execute(
        f"UPDATE trajectories SET ({cols}) = (SELECT {cols} FROM trajectories WHERE id = ?), pending = NULL"
        " WHERE id = ?",
        [source_id, traj_id],
    )
    db.execute("DELETE FROM trajectories WHERE id = ?", [source_id])


_TRAJECTORY_COLS = (
    "id", "schema_version", "source_format", "source_path", "source_ref", "title", "system", "model", "benchmark",
    "task", "outcome", "score", "metadata", "raw", "content_hash", "imported_at", "n_steps", "agents",
)
_INSERT_TRAJECTORY = (
    f"INSERT INTO trajectories ({', '.join(_TRAJECTORY_COLS)}, pending)"
    f" VALUES ({', '.join('?' for _ in _TRAJECTORY_COLS)}, ?)"
)


def trajectory_values(traj: Trajectory, n_steps: int, agents: Iterable[str] | None = None) -> list:
    """The trajectories row of ``traj``, in ``_TRAJECTORY_COLS`` order; ``agents`` when its steps
    are not in ``traj.steps`` (a streamed import)."""
    agents = {s.agent for s in traj.steps if s.agent} if agents is None else agents
    return [
        traj.id, traj.schema_version, traj.source_format, traj.source_path, traj.source_ref, traj.title,
        traj.system, traj.model, traj.benchmark, traj.task, traj.outcome, traj.score, dumps(traj.metadata),
        zlib.compress(traj.raw, RAW_COMPRESSION) if traj.raw is not None else None, traj.content_hash,
        traj.imported_at.isoformat(), n_steps, dumps(sorted(agents)),
    ]


#: Bytes of a raw file read, and of its compressed copy written, at a time.
RAW_CHUNK = 1024 * 1024


def write_raw_file(db: Database, traj_id: str, path: Path, between: Callable[[], None] | None = None) -> None:
    """Store the bytes of ``path`` as ``traj_id``'s raw original, compressed as they are read
    (as ``trajectory_values`` would compress them whole), holding a chunk at a time: the
    compressed copy waits in a temporary file until its size is known, then is written into a
    blob of that size. ``between`` runs after each chunk written (an import may commit there)."""
    pack = zlib.compressobj(RAW_COMPRESSION)
    with tempfile.TemporaryFile() as packed, path.open("rb") as fh:
        while chunk := fh.read(RAW_CHUNK):
            packed.write(pack.compress(chunk))
        packed.write(pack.flush())
        size = packed.tell()
        packed.seek(0)
        db.execute("UPDATE trajectories SET raw = zeroblob(?) WHERE id = ?", [size, traj_id])
        (rowid,) = db.execute("SELECT rowid FROM trajectories WHERE id = ?", [traj_id]).fetchone()
        offset = 0
        while chunk := packed.read(RAW_CHUNK):
            with db.conn.blobopen("trajectories", "raw", rowid) as blob:
                blob.seek(offset)
                blob.write(chunk)
            offset += len(chunk)
            if between is not None:
                between()


#: Steps moved from one trajectory id to another per statement.
MOVE_CHUNK = 20_000


def move_steps(db: Database, source_id: str, traj_id: str, between: Callable[[], None] | None = None) -> None:
    """Give the steps of ``source_id`` to ``traj_id`` (a row that exists), ``MOVE_CHUNK`` at a time."""
    while db.execute(
        f"UPDATE steps SET trajectory_id = ?1, {_MOVED_ID}"
        " WHERE rowid IN (SELECT rowid FROM steps WHERE trajectory_id = ?2 LIMIT ?3)",
        [traj_id, source_id, MOVE_CHUNK],
    ).rowcount:
        if between is not None:
            between()


def save_stubs(db: Database, stubs: Sequence[tuple[Trajectory, int]], pending: str | None = None) -> list[SaveResult]:
    """Store (trajectory, original number of steps) stubs whose ids are new, with one executemany.

    A stub never replaces a stored trajectory (real or stub): those, and repeats of an id in
    ``stubs``, are "unchanged". The result is one status per stub, in order. ``pending`` is the
    token of the import writing them unseen (see ``store.staging``).
    """
    with write(db):
        known = set(existing_hashes(db, [t.id for t, _ in stubs], pending))
        out: list[SaveResult] = []
        rows = []
        for traj, n_steps in stubs:
            if traj.id in known:
                out.append("unchanged")
                continue
            known.add(traj.id)
            out.append("imported")
            values = trajectory_values(traj, n_steps)
            values[_TRAJECTORY_COLS.index("content_hash")] = STUB_HASH
            rows.append([*values, pending])
        db.conn.executemany(_INSERT_TRAJECTORY, rows)
    return out


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


def delete_steps(db: Database, traj_id: str, batches: IndexedBatches | None = None) -> None:
    """Remove the steps of ``traj_id`` and their full-text rows; an import's ``batches`` index
    what they wrote first (the rows to remove must be in the index)."""
    if batches is not None:
        batches.catch_up()
    db.execute(
        "INSERT INTO steps_fts(steps_fts, rowid, content)"
        " SELECT 'delete', rowid, content FROM steps WHERE trajectory_id = ?",
        [traj_id],
    )
    db.execute("DELETE FROM steps WHERE trajectory_id = ?", [traj_id])


def existing_hashes(db: Database, ids: Iterable[str], pending: str | None = None) -> dict[str, str]:
    """Content hashes of the given ids that are already stored (for fast idempotent re-import):
    visible ones, and those the import ``pending`` has written so far."""
    ids = list(ids)
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for tid, h in db.execute(
            f"SELECT id, content_hash FROM trajectories WHERE id IN ({marks}) AND (pending IS NULL OR pending = ?)",
            [*chunk, pending],
        ).fetchall():
            out[tid] = h
    return out


_SUMMARY_COLS = select(TrajectorySummary)
_SUMMARY_DECODE = json_columns("agents", "metadata")


#: The order trajectories are listed in, everywhere they are listed.
_LISTING_ORDER = "coalesce(system, ''), coalesce(model, ''), id"


def list_trajectories(db: Database, flt: TrajectoryFilter | None = None) -> list[TrajectorySummary]:
    """Trajectories matching the filter, in a stable order (system, model, id)."""
    return list(iter_trajectories(db, flt))


def iter_trajectories(db: Database, flt: TrajectoryFilter | None = None) -> Iterator[TrajectorySummary]:
    """:func:`list_trajectories` one at a time, as they are read."""
    flt = flt or TrajectoryFilter()
    where, params = _where(flt)
    sql = f"SELECT {_SUMMARY_COLS} FROM trajectories t WHERE " + " AND ".join(where)
    sql += f" ORDER BY {_LISTING_ORDER}"
    return each(db.execute(sql, params), TrajectorySummary, _SUMMARY_DECODE)


def longest_values(db: Database, flt: TrajectoryFilter, columns: Sequence[str]) -> dict[str, int]:
    """The length of the longest value of each of ``columns`` (of ``trajectories``) among the
    trajectories matching ``flt``: what a table printed in parts needs to give every part the
    same column widths."""
    where, params = _where(flt)
    row = db.execute(f"SELECT {', '.join(f'coalesce(max(length(t.{c})), 0)' for c in columns)} FROM trajectories t"
                     " WHERE " + " AND ".join(where), params).fetchone()
    return dict(zip(columns, row, strict=True))


def queue_page(
    db: Database,
    flt: TrajectoryFilter,
    limit: int,
    *,
    text: str | None = None,
    assigned_to: str | None = None,
    assigned_only: bool = False,
    unfinished_for: str | None = None,
) -> tuple[list[TrajectorySummary], int]:
    """The first ``limit`` trajectories of an annotation queue, and how many match in all.

    Matching ``flt``; with ``text``, whose id or title holds it (in any case) or whose steps
    hold every word of it (full text); ``assigned_only``: given to ``assigned_to``, who
    otherwise sees those first; ``unfinished_for``: not done by that annotator. In the order of
    :func:`list_trajectories` after that. A queue of a million trajectories is read a page at a
    time: its rows as models and their table cells took seconds and a gigabyte at 100,000.
    """
    where, params = _where(flt)
    if text:
        db.conn.create_function("casefold", 1, _casefold, deterministic=True)
        needle = text.casefold()
        where.append(f"(instr(casefold(t.id), ?) OR instr(casefold(coalesce(t.title, '')), ?)"
                     f" OR {_IN_MATCHING_STEPS})")
        params += [needle, needle, fts_query(text)]
    if unfinished_for is not None:
        where.append("NOT EXISTS (SELECT 1 FROM review_state r WHERE r.trajectory_id = t.id AND r.annotator = ?"
                     " AND r.status = 'done')")
        params.append(unfinished_for)
    mine = "EXISTS (SELECT 1 FROM assignments a WHERE a.trajectory_id = t.id AND a.annotator = ?)"
    order, order_params = _LISTING_ORDER, []
    if assigned_to is not None and assigned_only:
        where.append(mine)
        params.append(assigned_to)
    elif assigned_to is not None:
        order, order_params = f"{mine} DESC, {order}", [assigned_to]
    condition = " AND ".join(where)
    total = db.execute(f"SELECT count(*) FROM trajectories t WHERE {condition}", params).fetchone()[0]
    rows = decode(db.execute(f"SELECT {_SUMMARY_COLS} FROM trajectories t WHERE {condition} ORDER BY {order} LIMIT ?",
                             [*params, *order_params, limit]), TrajectorySummary, _SUMMARY_DECODE)
    return rows, total


def _casefold(value: str | None) -> str | None:
    return value.casefold() if value is not None else None


#: The condition that a trajectory has a step matching a full-text query (its one parameter).
_IN_MATCHING_STEPS = ("t.id IN (SELECT s.trajectory_id FROM steps s JOIN steps_fts f ON f.rowid = s.rowid"
                      " WHERE steps_fts MATCH ?)")


def _where(flt: TrajectoryFilter, column_indexes: bool = True) -> tuple[list[str], list]:
    """The filter's conditions on ``trajectories t`` and their parameters. ``column_indexes=False``
    writes the comparisons of columns as ``+t.col = ?``, which no index on the column can serve: a
    query whose loop must follow the id's index (a label export) is not sent down another one."""
    where: list[str] = ["t.pending IS NULL"]  # an import not yet published is nobody's to see
    params: list = []
    column = "t" if column_indexes else "+t"
    for col in ("system", "model", "benchmark", "outcome", "source_format"):
        value = getattr(flt, col)
        if value is not None:
            where.append(f"{column}.{col} = ?")
            params.append(value)
    if flt.ids is not None:
        condition, ids = one_of("t.id", flt.ids)
        where.append(condition)
        params.extend(ids)
    if flt.since is not None:
        where.append("t.imported_at >= ?")
        params.append(flt.since.isoformat())
    if flt.until is not None:
        where.append("t.imported_at < ?")
        params.append(flt.until.isoformat())
    if flt.search:
        where.append(_IN_MATCHING_STEPS)
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
        # A tag is a value of the metadata's 'tags' list or the name of an audit sample (migration 007).
        where.append("(EXISTS (SELECT 1 FROM json_each(t.metadata, '$.tags') j WHERE j.value = ?)"
                     " OR EXISTS (SELECT 1 FROM sample_items si WHERE si.trajectory_id = t.id AND si.tag = ?))")
        params.extend([flt.tag, flt.tag])
    return where, params


def get_summary(db: Database, traj_id: str) -> TrajectorySummary:
    summary = decode_one(
        db.execute(f"SELECT {_SUMMARY_COLS} FROM trajectories WHERE id = ? AND pending IS NULL", [traj_id]),
        TrajectorySummary, _SUMMARY_DECODE,
    )
    if summary is None:
        raise NotFound(f"no trajectory with id {traj_id!r}")
    return summary


def resolve_id(db: Database, ref: str) -> str:
    """The full id for an exact id or a unique prefix of one (what users type at the CLI)."""
    if db.execute("SELECT 1 FROM trajectories WHERE id = ? AND pending IS NULL", [ref]).fetchone():
        return ref
    rows = db.execute(
        "SELECT id FROM trajectories WHERE substr(id, 1, ?) = ? AND pending IS NULL LIMIT 6", [len(ref), ref]
    ).fetchall()
    if len(rows) == 1:
        return rows[0][0]
    if not rows:
        raise NotFound(f"no trajectory with id {ref!r}")
    raise NotFound(f"{ref!r} is ambiguous: " + ", ".join(r[0] for r in rows[:5]) + " ...")


#: The trajectory's columns with and without its raw bytes, made once: a bulk run reads a
#: trajectory per request, and building the list each time was nearly half of the read.
_TRAJECTORY_SQL = {
    with_raw: f"SELECT {select(Trajectory, omit=('steps',) if with_raw else ('steps', 'raw'))} FROM trajectories"
    " WHERE id = ? AND pending IS NULL"
    for with_raw in (False, True)
}
_TRAJECTORY_DECODE = {**json_columns("metadata"), "raw": zlib.decompress}


def get_trajectory(db: Database, traj_id: str, *, with_steps: bool = True, with_raw: bool = False) -> Trajectory:
    """The whole trajectory; steps and raw bytes only when asked (they can be large)."""
    traj = decode_one(
        db.execute(_TRAJECTORY_SQL[with_raw], [traj_id]),
        Trajectory,
        _TRAJECTORY_DECODE,
    )
    if traj is None:
        raise NotFound(f"no trajectory with id {traj_id!r}")
    if with_steps:
        traj.steps = get_steps(db, traj_id)
    return traj


def distinct_values(db: Database, column: Literal["system", "model", "benchmark", "source_format"]) -> list[str]:
    """The values a filter on ``column`` can take."""
    return [
        r[0]
        for r in db.execute(
            f"SELECT DISTINCT {column} FROM trajectories WHERE {column} IS NOT NULL AND pending IS NULL"
            f" ORDER BY {column}"
        )
    ]


def delete_trajectory(db: Database, traj_id: str) -> None:
    """Remove a trajectory with its steps, labels and review state."""
    with write(db):
        delete_steps(db, traj_id)
        for table in ("label_state", "suggestion_decisions", "review_state", "review_events", "attributions"):
            db.execute(f"DELETE FROM {table} WHERE trajectory_id = ?", [traj_id])
        db.execute("DELETE FROM labels WHERE trajectory_id = ?", [traj_id])
        db.execute("DELETE FROM trajectories WHERE id = ?", [traj_id])
        verdict_summary.refresh(db)
