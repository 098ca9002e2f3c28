"""An import's short transactions, with the full-text rows of their steps written at the commit.

FTS5 writes the terms it has gathered as a new segment of its index at the start of every
statement that writes to it inside a transaction (its savepoint): indexing each trajectory's
steps as they are written left a segment per trajectory for it to merge, and a MAD import
spent a third more in SQLite than the same rows written at once. :class:`IndexedBatches`
indexes every step its transaction wrote in one statement just before the commit, so what is
committed is always indexed, as before, and the index gets one segment per transaction.

Steps are numbered by ``rowid``, which SQLite gives as one more than the largest: the steps a
transaction wrote are those above the largest ``rowid`` before its first write. Deleting
steps would let the next ones take numbers at or below that mark, and the full-text rows of
deleted steps are removed from the index, which must hold them: so :meth:`IndexedBatches.catch_up`
comes before any delete of steps in the transaction (``trajectories.delete_steps`` takes the batches).
"""

from __future__ import annotations

from sqlite_utils import Database

from annotator.store.db import Batches


def last_step_rowid(db: Database) -> int:
    """The largest step ``rowid`` (0 with no steps): steps written next are numbered above it."""
    return db.execute("SELECT coalesce(max(rowid), 0) FROM steps").fetchone()[0]


def index_steps_after(db: Database, rowid: int) -> None:
    """Put the steps numbered above ``rowid`` into the full-text index, in one statement."""
    db.execute("INSERT INTO steps_fts(rowid, content) SELECT rowid, content FROM steps WHERE rowid > ?", [rowid])


class IndexedBatches(Batches):
    """:class:`~annotator.store.db.Batches` whose steps (``trajectories.write_steps`` given
    these batches) are put into the full-text index at each commit."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._above: int | None = None  # the largest step rowid before this transaction's first write

    def before_steps(self) -> None:
        """Note where the steps about to be written begin (once per transaction)."""
        if self._above is None:
            self._above = last_step_rowid(self.db)

    def catch_up(self) -> None:
        """Index the steps written since the last catch-up, in one statement."""
        if self._above is not None:
            index_steps_after(self.db, self._above)
            self._above = None

    def commit(self) -> None:
        if self.db.conn.in_transaction:
            self.catch_up()
        super().commit()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self._above = None  # rolled back with the rows it marked
        super().__exit__(exc_type, exc, tb)
