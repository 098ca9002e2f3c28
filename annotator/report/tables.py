"""The shape every report and agreement takes before rendering: sections of tables of records.

Statistics produce records (one dict per row, raw numbers, None where a value does not
exist); renderers only format them. JSON writes the records as they are, CSV flattens them
to one line per value, and the terminal, Markdown and HTML renderers draw them as tables, so
every renderer shows the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Rows(Sequence):
    """Records made a block at a time as they are read: a table of a million rows (the
    per-trajectory listing) never exists as a million dicts at once, and the JSON and CSV
    renderings write it block by block (:meth:`blocks`)."""

    def __init__(self, n: int, make: Callable[[int, int], list[dict[str, Any]]], block: int = 50_000) -> None:
        self._n, self._make, self._block = n, make, block

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return self._make(*index.indices(self._n)[:2]) if index.step in (None, 1) else list(self)[index]
        if not -self._n <= index < self._n:
            raise IndexError(index)
        index %= self._n
        return self._make(index, index + 1)[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for block in self.blocks():
            yield from block

    def __eq__(self, other: object) -> bool:
        """Equal to the same records in a list or in other Rows."""
        if not isinstance(other, (list, Rows)):
            return NotImplemented
        return len(other) == self._n and list(self) == list(other)

    def blocks(self) -> Iterator[list[dict[str, Any]]]:
        """The records, a block of rows at a time."""
        for start in range(0, self._n, self._block):
            yield self._make(start, min(self._n, start + self._block))


@dataclass
class Table:
    """One table: ``records`` hold raw values keyed by ``columns`` (a list, or :class:`Rows`
    made as they are read)."""

    name: str
    title: str
    columns: list[str]
    records: list[dict[str, Any]] | Rows
    notes: list[str] = field(default_factory=list)
    #: Rows in the full table when ``records`` is a shortened view (long per-trajectory lists).
    total_rows: int | None = None


@dataclass
class Finding:
    """One line of a document's key findings (see :mod:`annotator.report.findings`)."""

    key: str  # what it is about: counts, top_modes, mean_modes, strongest_predictor, ...
    text: str  # the line as every rendering shows it (plain text)
    data: dict[str, Any] = field(default_factory=dict)  # the numbers behind it


@dataclass
class Section:
    title: str
    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Document:
    """A whole report: a header (source, codebook, filters, counts, versions) and sections."""

    kind: str  # "report" | "agreement"
    header: dict[str, Any]
    sections: list[Section]
    #: The key findings every rendering opens with (:mod:`annotator.report.findings`).
    findings: list[Finding] = field(default_factory=list)

    def table(self, name: str) -> Table | None:
        for s in self.sections:
            for t in s.tables:
                if t.name == name:
                    return t
        return None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "findings": [{"key": f.key, "text": f.text, "data": f.data} for f in self.findings],
            "header": self.header,
            "sections": [
                {
                    "title": s.title,
                    "notes": s.notes,
                    "tables": [
                        {
                            "name": t.name,
                            "title": t.title,
                            "columns": t.columns,
                            "notes": t.notes,
                            "total_rows": t.total_rows if t.total_rows is not None else len(t.records),
                            "records": t.records,
                        }
                        for t in s.tables
                    ],
                }
                for s in self.sections
            ],
        }


def num(value: Any, digits: int | None = 6) -> float | int | None:
    """A numpy scalar as a plain Python number for the records; NaN and inf become None."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    f = float(value)
    if not np.isfinite(f):
        return None
    return round(f, digits) if digits is not None else f
