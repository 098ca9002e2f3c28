"""Opening the database: the connection settings that make concurrent annotators safe.

WAL lets readers and one writer work at once (two annotators in one file); the busy timeout
turns a momentary lock into a short wait instead of a "database is locked" error; writes
start with BEGIN IMMEDIATE so two writers queue up instead of deadlocking on a lock upgrade.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from annotator import __version__
from annotator.errors import StoreError
from annotator.store.schema import MIGRATIONS

#: Seconds a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_S = 30.0

#: Page cache in KiB (SQLite's default is 2 MB). An import writes steps and their full-text
#: index in one transaction per file; with the default cache the FTS segments and b-tree pages
#: are flushed and re-read constantly, and a MAD-sized import takes twice as long.
CACHE_KIB = 64 * 1024


def open_db(path: str | Path) -> sqlite_utils.Database:
    """Open (creating if needed) and migrate the database at ``path``; the only way in."""
    path = Path(path)
    if path.exists() and path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    if not path.parent.exists():
        raise StoreError(f"{path}: folder {path.parent} does not exist")
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        conn.execute("PRAGMA foreign_keys = ON")
        db = sqlite_utils.Database(conn)
        _refuse_newer_schema(db, path)
        with write(db):
            MIGRATIONS.apply(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot open database: {exc}") from exc
    return db


def _refuse_newer_schema(db: sqlite_utils.Database, path: Path) -> None:
    """A database a newer release has migrated is refused before anything is written: this
    release would read tables whose meaning changed, and write rows the newer one misreads."""
    known = [m.name for m in MIGRATIONS._migrations]
    unknown = [m.name for m in MIGRATIONS.applied(db) if m.name not in known]
    if unknown:
        db.conn.close()
        raise StoreError(
            f"{path}: migrated by a newer release of mast-annotator (migration {', '.join(unknown)});"
            f" this release, {__version__}, knows migrations up to {known[-1]}: upgrade to open it"
        )


def data_version(db: sqlite_utils.Database) -> int:
    """A number that changes when another connection (another process) commits to the file.

    SQLite's ``PRAGMA data_version``: this connection's own commits leave it unchanged, so a
    front end polling it learns of other annotators' and pre-labelling runs' writes only, and
    reading it costs a look at the shared WAL index, no query over any table.
    """
    return db.conn.execute("PRAGMA data_version").fetchone()[0]


@contextmanager
def write(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """One write transaction: all of it is committed, or none of it.

    Nested use joins the outer transaction (through a savepoint), so store functions can be
    composed into one atomic unit such as "import this file". A lock held by another process
    beyond the busy timeout is a ``StoreError`` (shown as a message, not a crash).
    """
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:  # another writer kept the lock past the busy timeout
        raise StoreError(f"the database stayed locked by another process for {BUSY_TIMEOUT_S:.0f} s; nothing was written") from exc
    try:
        yield db
    except BaseException:
        db.conn.rollback()
        raise
    else:
        db.conn.commit()
