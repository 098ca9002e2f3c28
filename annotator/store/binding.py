"""Rows bound fast: a None given to SQLite as a NaN, which it stores as NULL; many rows a statement.

SQLite stores a NaN as NULL (``sqlite3_bind_double``), and Python's sqlite3 binds a float at
once where a None goes through its adapter lookup first, which costs several times more. A
label row has eight or so Nones, a step row a dozen, and an import or an export writes hundreds
of thousands of rows: bound as NaNs, the insert of a MAD import's 47,416 steps takes half the time.

Running a statement costs about as much again as binding its row, so :func:`insert_rows`
inserts many rows a statement: a label export's 566,272 labels went into their staging table
in two thirds of the time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import chain

_NULL = {None: float("nan")}.get
#: Rows one INSERT of :func:`insert_rows` takes (× the columns: far below SQLite's 32,766
#: parameters; more rows a statement gained nothing).
ROWS_PER_STATEMENT = 50


def bound(row: Sequence) -> tuple:
    """``row`` (of hashable values) with each None as a NaN, for ``executemany``."""
    return tuple(map(_NULL, row, row))


def insert_rows(conn: sqlite3.Connection, table: str, columns: str, rows: Sequence[Sequence]) -> None:
    """Insert ``rows`` (each a value per name in ``columns``, comma-separated) into ``table``,
    in order, ``ROWS_PER_STATEMENT`` a statement."""
    one = f"({', '.join('?' for _ in columns.split(','))})"
    full = len(rows) - len(rows) % ROWS_PER_STATEMENT
    many = f"INSERT INTO {table} ({columns}) VALUES {', '.join([one] * ROWS_PER_STATEMENT)}"
    conn.executemany(many, (bound(tuple(chain.from_iterable(rows[i:i + ROWS_PER_STATEMENT])))
                            for i in range(0, full, ROWS_PER_STATEMENT)))
    conn.executemany(f"INSERT INTO {table} ({columns}) VALUES {one}", map(bound, rows[full:]))
