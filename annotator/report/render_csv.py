"""CSV rendering in long format: one line per value (table, row, column, value).

Long format keeps every table of a document in one file that spreadsheet and dataframe tools
read directly (pivot on table/column); header fields are written as table "header". Every
value of a record is written, including those the rendered tables do not show (the JSON has
the same). Text cells are neutralised for spreadsheets (see ``text.spreadsheet_cell``).
"""

from __future__ import annotations

import csv
import io
from typing import TextIO

from annotator.text import spreadsheet_cell
from annotator.report.tables import Document


def _flatten(prefix: str, value: object, out: list[tuple[str, object]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(f"{prefix}[{i}]", v, out)
    else:
        out.append((prefix, value))


def render(doc: Document) -> str:
    buf = io.StringIO()
    write(doc, buf)
    return buf.getvalue()


def write(doc: Document, out: TextIO) -> None:
    """The document in long CSV, written to ``out`` as it is made (a per-trajectory table of
    :class:`~annotator.report.tables.Rows` is read a block at a time)."""
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["table", "row", "column", "value"])
    for i, finding in enumerate(doc.findings):
        w.writerow(["findings", i, finding.key, spreadsheet_cell(finding.text)])
    fields: list[tuple[str, object]] = []
    _flatten("", doc.header, fields)
    for key, value in fields:
        w.writerow(["header", "", spreadsheet_cell(key), "" if value is None else spreadsheet_cell(value)])
    for section in doc.sections:
        for table in section.tables:
            for i, rec in enumerate(table.records):
                for col in [*table.columns, *(k for k in rec if k not in table.columns)]:
                    v = rec.get(col)
                    w.writerow([table.name, i, spreadsheet_cell(col), "" if v is None else spreadsheet_cell(v)])
