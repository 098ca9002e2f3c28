"""Rows bound fast: a None given to SQLite as a NaN, which it stores as NULL.

SQLite stores a NaN as NULL (``sqlite3_bind_double``), and Python's sqlite3 binds a float at
once where a None goes through its adapter lookup first, which costs several times more. A
label row has eight or so Nones, a step row a dozen, and an import or an export writes hundreds
of thousands of rows: bound as NaNs, the insert of a MAD import's 47,416 steps takes half the time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

#: What a None is bound as. One object: rows in bound form compare equal (a tuple compares
#: its items by identity first), where two NaNs never do.
NULL = float("nan")
_NULL = {None: NULL}.get


def bound(row: Sequence) -> tuple:
    """``row`` (of hashable values) with each None as a NaN, for ``executemany``."""
    return tuple(map(_NULL, row, row))


def bound_column(values: Sequence) -> Iterator:
    """The values of a column (hashable) with each None as a NaN: for rows built a column at a
    time (a block of a label export), with no Python call per row."""
    return map(_NULL, values, values)
