"""Opening the database: the connection settings that make concurrent annotators safe.

WAL lets readers and one writer work at once (two annotators in one file), and readers never
wait for the writer: opening a database whose schema is current takes no lock, so ``mast
list`` or a report runs while an import writes. Writes start with BEGIN IMMEDIATE so two
writers queue up instead of deadlocking on a lock upgrade; a writer waiting for the lock looks
every few milliseconds (SQLite's own busy handler sleeps up to 100 ms between looks and can
miss the moment a long writer lets go), and long writers (imports, pre-labelling) hold the lock
for a fraction of a second at a time through :class:`Batches`, so a tag waits for them about
that long, never for a whole import.

Errors of the database itself (read-only file, full disk, damaged pages) become a
``StoreError`` that names the file and says what to do (``errors.database_trouble``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlite_utils

from annotator import __version__
from annotator.errors import StoreError, database_trouble, trouble_reason
from annotator.store.schema import MIGRATIONS

#: Seconds a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_S = 30.0

#: Seconds a long writer keeps one transaction open before committing and letting others in.
HOLD_S = 0.25

#: Seconds a long writer leaves the lock free after committing a batch: several times the
#: interval at which a waiting writer looks, so that it gets in.
GAP_S = 0.02

#: How often (seconds) a writer waiting for the lock tries again.
_POLL_S = 0.002

#: Page cache in KiB (SQLite's default is 2 MB). An import writes steps and their full-text
#: index in one transaction per file; with the default cache the FTS segments and b-tree pages
#: are flushed and re-read constantly, and a MAD-sized import takes twice as long.
CACHE_KIB = 64 * 1024
#: SQLite's default page cache in KiB, for a reader that passes over the rows once.
SINGLE_PASS_CACHE_KIB = 2000

def _refused(db: sqlite_utils.Database, exc: sqlite3.DatabaseError) -> StoreError:
    """The ``StoreError`` a write ends in: the file, why, what to do; nothing of it was written."""
    try:
        path = db.conn.execute("PRAGMA database_list").fetchone()[2] or None
    except sqlite3.Error:
        path = None
    if "locked" in str(exc):
        reason = f"the database stayed locked by another process for {BUSY_TIMEOUT_S:g} s, nothing was written: try again"
    else:
        reason = trouble_reason(exc)
    return StoreError(f"{path}: {reason}" if path else reason, reason)


def open_db(path: str | Path, on_upgrade: Callable[[list[str]], None] | None = None) -> sqlite_utils.Database:
    """Open (creating if needed) and migrate the database at ``path``; the only way in.

    Migrations that are due run in one write transaction; a database already at the latest
    schema is only read, so opening it never waits for another process's write. ``on_upgrade``
    is told the names of the migrations about to run on a database that has tables already
    (indexing a million trajectories' labels takes minutes, which a person should not meet as a
    silent terminal).
    """
    path = Path(path)
    if path.exists() and path.is_dir():
        raise StoreError(f"{path}: is a directory, not a database file")
    if not path.parent.exists():
        raise StoreError(f"{path}: folder {path.parent} does not exist")
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        conn.execute("PRAGMA foreign_keys = ON")
        db = sqlite_utils.Database(conn)
        _refuse_newer_schema(db, path)
        if pending := MIGRATIONS.pending(db):
            if on_upgrade is not None and "_sqlite_migrations" in db.table_names():
                on_upgrade([m.name for m in pending])
            with write(db):
                MIGRATIONS.apply(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(database_trouble(path, exc)) from exc
    return db


def open_db_to_read(path: str | Path, cache_kib: int = CACHE_KIB) -> sqlite_utils.Database:
    """Open the existing database at ``path`` only to read (SQLite's ``mode=ro``), for a process
    that must never take the write lock: no WAL switch, no migration (whoever opened it to
    write did both). A file that cannot be read fails here, as a ``StoreError``, not at the
    first query. ``cache_kib``: its page cache (a reader that passes over the rows once reuses
    no page, and needs no more than SQLite's default, ``SINGLE_PASS_CACHE_KIB``)."""
    try:
        conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True,  # quoted: ?, # and %
                               timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute(f"PRAGMA cache_size = -{cache_kib}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise StoreError(database_trouble(path, exc)) from exc
    return sqlite_utils.Database(conn)


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


def _begin(db: sqlite_utils.Database) -> None:
    """BEGIN IMMEDIATE, trying again every few milliseconds until ``BUSY_TIMEOUT_S`` has passed;
    a ``StoreError`` if the lock never came (or the file cannot be written at all)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    db.conn.execute("PRAGMA busy_timeout = 1")
    try:
        while True:
            try:
                db.conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise _refused(db, exc) from exc
            time.sleep(_POLL_S)
    finally:
        db.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")


def _commit(db: sqlite_utils.Database) -> None:
    """COMMIT; if the disk refuses it, roll back and say so (a ``StoreError``)."""
    try:
        db.conn.commit()
    except sqlite3.DatabaseError as exc:
        db.conn.rollback()
        raise _refused(db, exc) from exc


@contextmanager
def write(db: sqlite_utils.Database) -> Iterator[sqlite_utils.Database]:
    """One write transaction: all of it is committed, or none of it.

    Nested use joins the outer transaction (through a savepoint), so store functions can be
    composed into one atomic unit. A lock held by another process beyond the busy timeout, a
    read-only file, a full disk or a damaged page is a ``StoreError`` naming the file (shown as
    a message, not a crash), and nothing of the transaction is written.
    """
    if db.conn.in_transaction:
        with db.atomic():
            yield db
        return
    _begin(db)
    try:
        yield db
    except sqlite3.DatabaseError as exc:
        db.conn.rollback()
        raise _refused(db, exc) from exc
    except BaseException:
        db.conn.rollback()
        raise
    _commit(db)


class Batches:
    """A long write cut into short transactions, so that other writers wait a fraction of a second.

    ``with Batches(db) as batches:`` opens the first transaction; ``batches.point()``, called
    between two pieces of work that may be committed apart, commits once the transaction has
    been open ``HOLD_S`` and begins the next after a short gap; ``batches.commit()`` commits now
    (before work that needs no lock, such as parsing the next record) and ``batches.begin()``
    opens the next. Leaving the block commits; an error rolls back the open transaction only,
    so whatever must appear at once is made visible by the caller in one last short
    transaction (an import publishes its file that way) and discarded by it on failure.
    """

    def __init__(self, db: sqlite_utils.Database):
        self.db = db
        self._since = 0.0

    def __enter__(self) -> Batches:
        self.begin()
        return self

    def begin(self) -> None:
        """Open a transaction unless one is open."""
        if not self.db.conn.in_transaction:
            _begin(self.db)
            self._since = time.monotonic()

    def point(self) -> None:
        """Commit and let other writers in if this transaction has been open long enough."""
        if not self.db.conn.in_transaction:
            self.begin()
        elif time.monotonic() - self._since >= HOLD_S:
            self.commit()
            time.sleep(GAP_S)
            self.begin()

    def commit(self) -> None:
        if self.db.conn.in_transaction:
            _commit(self.db)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        elif self.db.conn.in_transaction:
            self.db.conn.rollback()
