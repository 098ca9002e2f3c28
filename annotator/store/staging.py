"""Imports written in short transactions and made visible at once.

Importing a 100 MB file takes tens of seconds; in one transaction it would hold the write lock
all that time and every annotator's tag would wait for it. So an import writes in batches of a
fraction of a second (``db.Batches``) into rows that no reader sees, and publishes the file in
one last short transaction:

- a new trajectory is written with ``trajectories.pending`` set to the import's token (every
  reader of the store selects ``pending IS NULL`` only), its steps a chunk at a time, their
  full-text rows at each commit (``store.step_index``);
- a changed trajectory's new version is written the same way under a shadow id, and publishing
  moves it under the real id (the trajectory's labels and reviews stay);
- the labels of a trajectory the import is writing unseen go straight into ``labels``: no
  reader finds them, since the readers of labels go through their current state
  (``label_state``) or their trajectory, and a source's last activity passes over them;
  publishing makes them current. A failed import's go
  with their trajectory (``ON DELETE CASCADE``). The ranges of rows they were written in wait in
  a temporary table of the connection (``staged_ranges``);
- the labels of trajectories already visible wait in a temporary table of the connection
  (``staged_labels``), its attributions in memory, until then (releases before kept them in
  ``pending_labels``).

A file that fails is discarded (:func:`discard`): nothing of it remains, visible or not. A
process killed mid-import leaves only invisible rows, tagged with its import's token; the next
import discards those of imports that are gone (:func:`discard_abandoned`). An import is alive
while its process holds a lock on its lease file beside the database (``<db>-import-<id>``,
like SQLite's own ``-wal``): the kernel releases it when the process dies, however it dies,
and unlike a process id it is not taken over by the next process to get the same number (in a
container every first process is pid 1).
"""

from __future__ import annotations

import fcntl
import os
import socket
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path

from sqlite_utils import Database

from annotator.errors import AnnotatorError
from annotator.models import Attribution, Label, Trajectory, utcnow
from annotator.store.attributions import save_attribution
from annotator.store.binding import insert_rows
from annotator.store.db import Batches, write
from annotator.store.step_index import IndexedBatches
from annotator.store.labels import LABEL_COLUMN_NAMES, LABEL_COLUMNS, label_row, make_current
from annotator.store.trajectories import (
    SaveResult,
    delete_steps,
    move_steps,
    move_version,
    trajectory_values,
    upsert_trajectory,
    write_raw_file,
    write_steps,
)


class ImportClash(AnnotatorError):
    """Another process is importing the same trajectory right now."""


#: Lease files of this process's imports in progress, by token: the open, locked descriptors
#: (-1 for a database in memory, which has no file to put a lease beside).
_LEASES: dict[str, int] = {}


def _lease_path(db: Database, token: str) -> Path | None:
    """The lease file of import ``token`` (None for a database without a file)."""
    file = db.execute("PRAGMA database_list").fetchone()[2]
    return Path(f"{file}-import-{token.rsplit(':', 1)[-1]}") if file else None


def _take_lease(db: Database, token: str) -> None:
    path = _lease_path(db, token)
    if path is None:  # a database in memory is this connection's alone: the entry is the lease
        _LEASES[token] = -1
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new file: nobody else holds it
    _LEASES[token] = fd


def _end_lease(db: Database, token: str) -> None:
    fd = _LEASES.pop(token, None)
    path = _lease_path(db, token)
    if path is not None:
        path.unlink(missing_ok=True)
    if fd is not None and fd >= 0:
        os.close(fd)


def start(db: Database, source: str) -> str:
    """Register an import of ``source`` by this process; its token marks everything it stages."""
    host = socket.gethostname()
    token = f"{host}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
    _take_lease(db, token)  # before the row: a registered import always has its lease
    with write(db):
        _clear_staged(db)  # what a failed import could not withdraw is not this one's
        db.execute(
            "INSERT INTO imports (token, host, pid, source, started_at) VALUES (?, ?, ?, ?, ?)",
            [token, host, os.getpid(), source, utcnow().isoformat()],
        )
    return token


def shadow_id(token: str, trajectory_id: str) -> str:
    """Where the new version of a changed trajectory waits until it is published."""
    return f"{token}/{trajectory_id}"


def _claims(db: Database, traj_id: str, token: str) -> tuple[str | None, str | None]:
    """(content hash of the visible ``traj_id``, the row this import already staged for it),
    either None; ``ImportClash`` when another import is staging it."""
    visible, own, other = None, None, None
    for rid, pending, content_hash in db.execute(
        "SELECT id, pending, content_hash FROM trajectories WHERE id IN (?, ?)", [traj_id, shadow_id(token, traj_id)]
    ):
        if pending is None:
            visible = content_hash
        elif pending == token:
            own = rid
        else:
            other = pending
    if other is not None:
        raise ImportClash(f"trajectory {traj_id} is being imported by another process; import this file again"
                          " when that import is done")
    return visible, own


def stage_trajectory(db: Database, traj: Trajectory, token: str,
                     batches: IndexedBatches) -> tuple[SaveResult, str | None]:
    """Write ``traj`` unseen; (what publishing will make of it, the shadow id of a changed one).

    Re-importing identical content is "unchanged" and writes nothing; a trajectory that comes
    twice in one file is written once, the later version winning. Steps go in chunks, with a
    chance to commit between two, so a trajectory of a million steps never holds the lock long.
    """
    visible, own = _claims(db, traj.id, token)
    if own is None and visible == traj.content_hash:
        return "unchanged", None
    target = shadow_id(token, traj.id) if visible is not None else traj.id
    if own is not None:
        delete_steps(db, own, batches)
    values = trajectory_values(traj, len(traj.steps))
    values[0] = target
    upsert_trajectory(db, values, pending=token)
    write_steps(db, target, traj.steps, batches)
    if visible is not None:
        return "updated", target
    return ("updated" if own is not None else "imported"), None


def open_stream(db: Database, token: str, source_format: str) -> str:
    """A row, unseen, for the steps of a trajectory streamed in before its id is known (a file's
    metadata may follow its steps); :func:`close_stream` gives it its id. Returns its id."""
    provisional = shadow_id(token, f"stream-{uuid.uuid4().hex[:12]}")
    upsert_trajectory(db, trajectory_values(Trajectory(id=provisional, source_format=source_format), 0), pending=token)
    return provisional


def close_stream(db: Database, provisional: str, traj: Trajectory, n_steps: int, agents: Iterable[str],
                 raw_file: Path, token: str, batches: IndexedBatches) -> tuple[SaveResult, str | None]:
    """Finish a streamed trajectory whose steps are under ``provisional``, as
    :func:`stage_trajectory` would have written ``traj`` (same outcomes, same shadow rule);
    its raw original is ``raw_file``'s bytes, compressed as they are read."""
    visible, own = _claims(db, traj.id, token)
    if own is None and visible == traj.content_hash:
        _drop(db, provisional, batches)
        return "unchanged", None
    if own is not None:
        _drop(db, own, batches)  # an earlier record of this file with the same id: the later one wins
    values = trajectory_values(traj, n_steps, agents)
    if visible is not None:
        target = shadow_id(token, traj.id)  # published as a changed trajectory's new version
        upsert_trajectory(db, [target, *values[1:]], pending=token)
    else:
        target = traj.id
        upsert_trajectory(db, values, pending=token)
    move_steps(db, provisional, target, between=batches.point)
    _drop(db, provisional, batches)
    write_raw_file(db, target, raw_file, between=batches.point)
    if visible is not None:
        return "updated", target
    return ("updated" if own is not None else "imported"), None


def _drop(db: Database, traj_id: str, batches: IndexedBatches | None = None) -> None:
    """Remove a row this import staged, with its steps (``batches``: those it is writing in)."""
    delete_steps(db, traj_id, batches)
    db.execute("DELETE FROM trajectories WHERE id = ?", [traj_id])


def _staged(db: Database) -> str:
    """The table where this connection keeps the labels of the file it is importing on
    trajectories already visible, until it publishes them: a temporary one, the connection's
    own, so keeping them adds nothing to the database file or its log (the import's transaction
    holds the write lock, as before) and a process that dies leaves none behind.
    A connection imports one file at a time, so the table holds that file's labels alone."""
    db.execute(f"CREATE TEMP TABLE IF NOT EXISTS staged_labels (seq INTEGER PRIMARY KEY, {LABEL_COLUMNS})")
    return "temp.staged_labels"


def _ranges(db: Database) -> str:
    """The table where this connection keeps the ranges of ``labels`` rows (``after`` < id ≤
    ``upto``) it wrote for the trajectories of the file it is importing unseen, with how many
    of those rows stand (``n``): publishing makes them current, range by range in order, once
    it has seen that none went with a trajectory another process removed."""
    db.execute("CREATE TEMP TABLE IF NOT EXISTS staged_ranges"
               " (after INTEGER PRIMARY KEY, upto INTEGER NOT NULL, n INTEGER NOT NULL)")
    return "temp.staged_ranges"


def _clear_staged(db: Database) -> None:
    db.execute(f"DELETE FROM {_staged(db)}")
    db.execute(f"DELETE FROM {_ranges(db)}")


def stage_labels(db: Database, labels: Iterable[Label], unseen: Collection[str] = ()) -> int:
    """Keep labels until the import is published; returns how many (``unseen``: see
    :func:`stage_label_rows`)."""
    return stage_label_rows(db, [label_row(lab) for lab in labels], unseen)


def _last_label_id(db: Database) -> int:
    """The id after which the next label's comes (``labels`` is AUTOINCREMENT: an id is never
    given twice, so a range of rows written later never overlaps an earlier one)."""
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'labels'").fetchone()
    return row[0] if row else 0


_TRAJECTORY = LABEL_COLUMN_NAMES.index("trajectory_id")


def stage_label_rows(db: Database, rows: Sequence[tuple], unseen: Collection[str] = ()) -> int:
    """Keep labels in stored form (``labels.label_row``) until the import is published; returns
    how many. The labels of the trajectories ``unseen`` names, which this import is writing
    unseen, are written into ``labels`` now (in the import's transaction: no other writer's row
    comes between them) and their range of rows is noted: publishing has only to make them
    current, which keeps the write lock it holds short. The others wait in ``staged_labels``."""
    written = [row for row in rows if row[_TRAJECTORY] in unseen] if unseen else []
    if written:
        after = _last_label_id(db)
        insert_rows(db.conn, "labels", LABEL_COLUMNS, written)
        upto, ranges = _last_label_id(db), _ranges(db)
        if not db.execute(f"UPDATE {ranges} SET upto = ?, n = n + ? WHERE upto = ?", [upto, len(written), after]).rowcount:
            db.execute(f"INSERT INTO {ranges} VALUES (?, ?, ?)", [after, upto, len(written)])  # not right after the last
    waiting = [row for row in rows if row[_TRAJECTORY] not in unseen] if written else rows
    if waiting:
        insert_rows(db.conn, _staged(db), LABEL_COLUMNS, waiting)
    return len(rows)


def unstage_labels(db: Database, token: str, trajectory_id: str) -> int:
    """Withdraw the labels staged for one trajectory (a later record of it replaces them),
    those written for it unseen included; returns how many."""
    withdrawn = db.execute(f"DELETE FROM {_staged(db)} WHERE trajectory_id = ?", [trajectory_id]).rowcount
    if db.execute("SELECT 1 FROM trajectories WHERE id = ? AND pending = ?", [trajectory_id, token]).fetchone():
        db.execute(f"UPDATE {_ranges(db)} SET n = n - (SELECT count(*) FROM labels"
                   " WHERE trajectory_id = ? AND id > after AND id <= upto)", [trajectory_id])
        withdrawn += db.execute("DELETE FROM labels WHERE trajectory_id = ?", [trajectory_id]).rowcount
    return withdrawn


def _written_unseen(db: Database) -> list[tuple[int, int]]:
    """The ranges of rows :func:`stage_label_rows` wrote unseen, in order; ``ImportClash`` if a
    row is gone (another process removed its trajectory, and the labels went with it)."""
    ranges = db.execute(f"SELECT after, upto, n FROM {_ranges(db)} ORDER BY after").fetchall()
    for after, upto, n in ranges:
        if db.execute("SELECT count(*) FROM labels WHERE id > ? AND id <= ?", [after, upto]).fetchone()[0] != n:
            raise ImportClash("a trajectory of this file was removed by another process while the file was"
                              " imported, and its labels with it; import this file again")
    return [(after, upto) for after, upto, _ in ranges]


def publish(db: Database, token: str, replaced: Sequence[tuple[str, str]], attributions: Sequence[Attribution],
            source: Callable[[], None] | None = None) -> None:
    """Make everything the import staged visible, in one transaction.

    ``replaced`` pairs (shadow id, real id) of changed trajectories: the real one takes the
    shadow's steps and fields. Only this swap reads the replaced content again; a file of new
    trajectories publishes in milliseconds. ``source`` writes what else must appear with them
    (the record of the file read, ``store.sources``).
    """
    with write(db):
        if source is not None:
            source()
        for shadow, real in replaced:
            move_version(db, shadow, real)
        db.execute("UPDATE trajectories SET pending = NULL WHERE pending = ?", [token])
        for after, upto in _written_unseen(db):
            make_current(db, after, upto)
        before = _last_label_id(db)
        staged = _staged(db)
        db.execute(f"INSERT INTO labels ({LABEL_COLUMNS}) SELECT {LABEL_COLUMNS} FROM {staged} ORDER BY seq")
        make_current(db, before)
        _clear_staged(db)
        for att in attributions:
            save_attribution(db, att)
        db.execute("DELETE FROM imports WHERE token = ?", [token])
    _end_lease(db, token)


def discard(db: Database, token: str) -> None:
    """Remove everything an import staged, a trajectory at a time (short transactions)."""
    with Batches(db) as batches:
        for (tid,) in db.execute("SELECT id FROM trajectories WHERE pending = ?", [token]).fetchall():
            _drop(db, tid)
            batches.point()
        if token in _LEASES:  # this connection's own import: its labels are in its temporary tables
            _clear_staged(db)
        db.execute("DELETE FROM pending_labels WHERE token = ?", [token])  # what an earlier release staged
        db.execute("DELETE FROM imports WHERE token = ?", [token])
    _end_lease(db, token)


def discard_abandoned(db: Database) -> None:
    """Discard what imports left that are gone: their lease is no longer held."""
    for (token,) in db.execute("SELECT token FROM imports").fetchall():
        if token not in _LEASES and not _held(_lease_path(db, token)):
            discard(db, token)


def _held(path: Path | None) -> bool:
    """Whether a live process holds the lease file at ``path`` (a missing one is held by nobody)."""
    if path is None:
        return False
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
