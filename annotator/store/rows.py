"""Typed reads: rows become models by the names of their columns, in one decoder.

A query selects a model's fields with :func:`select` (the table's own name aliased to the
field's where they differ, ``idx AS "index"``); :func:`decode` pairs each value with its
column's name from ``cursor.description``, turns the columns that need it back into Python
values (JSON text, compressed bytes) and leaves the rest to the model's validation. No query
keeps a positional list of its own, so a field added to a model and its table is read
everywhere at once, and a column missing from the table is an error, not a shifted row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from annotator.store._json import dumps, loads

M = TypeVar("M", bound=BaseModel)

#: A column decoder: the stored value (never NULL) to the model's value.
Decoder = Callable[[Any], Any]


def one_of(column: str, ids: Collection[str]) -> tuple[str, list]:
    """The condition (and its parameter) that ``column`` is one of ``ids``: one parameter whatever
    the number of ids, a JSON array read by ``json_each``, where a ``?`` each would meet SQLite's
    limit on parameters (32,766 by default)."""
    return f"{column} IN (SELECT value FROM json_each(?))", [dumps(list(ids))]


def among(column: str, ids: Collection[str] | None) -> tuple[str, list]:
    """:func:`one_of` as ``" AND …"``, to append to a WHERE; ``("", [])`` for None (no restriction)."""
    if ids is None:
        return "", []
    condition, params = one_of(column, ids)
    return f" AND {condition}", params


def select(
    model: type[BaseModel], *, table: str = "", renamed: Mapping[str, str] | None = None, omit: Collection[str] = ()
) -> str:
    """The SELECT list of ``model``'s fields, each under the field's name. ``renamed`` maps a field
    to the column that holds it, or to an SQL expression; ``table`` prefixes the column names."""
    prefix = f"{table}." if table else ""
    renamed = renamed or {}

    def source(field: str) -> str:
        column = renamed.get(field, field)
        return prefix + column if column.isidentifier() else column

    return ", ".join(
        source(f) if renamed.get(f, f) == f else f'{source(f)} AS "{f}"' for f in model.model_fields if f not in omit
    )


def json_columns(*names: str) -> dict[str, Decoder]:
    """Decoders for TEXT columns that hold JSON (an empty text counts as NULL)."""
    return dict.fromkeys(names, loads)


def decode(cursor: sqlite3.Cursor, model: type[M], decoders: Mapping[str, Decoder] | None = None) -> list[M]:
    """Every row of ``cursor`` as a ``model``. A decoded column that is NULL (or empty) leaves its
    field at the model's default; any other NULL is passed on as None."""
    return list(_rows(cursor, model, decoders or {}))


def each(cursor: sqlite3.Cursor, model: type[M], decoders: Mapping[str, Decoder] | None = None) -> Iterator[M]:
    """The rows of ``cursor`` as ``model``s, one at a time, as :func:`decode` makes them: a listing
    of a million rows is printed as it is read, not held whole."""
    return iter(_rows(cursor, model, decoders or {}))


def decode_one(cursor: sqlite3.Cursor, model: type[M], decoders: Mapping[str, Decoder] | None = None) -> M | None:
    """The first row of ``cursor`` as a ``model``, or None when there is none."""
    return next(_rows(cursor, model, decoders or {}), None)


def _rows(cursor: sqlite3.Cursor, model: type[M], decoders: Mapping[str, Decoder]) -> Iterable[M]:
    names = [d[0] for d in cursor.description]
    decoded = [(n, decoders[n]) for n in names if n in decoders]
    for row in cursor:
        values = dict(zip(names, row, strict=True))
        for name, decoder in decoded:
            value = values[name]
            if value is None or value == "":
                del values[name]
            else:
                values[name] = decoder(value)
        yield model(**values)
