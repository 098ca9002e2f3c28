"""JSON rendering: the whole document with every number, as the statistics produced it.

The text is orjson's (two-space indent), written out in pieces: the document with each
:class:`~annotator.report.tables.Rows` table left as a placeholder, then those tables' records a
block at a time, indented to where they stand. A million-trajectory report is 300 MB of JSON;
neither it nor its million records ever exist whole, and the bytes are those of the document
serialised in one call.
"""

from __future__ import annotations

import io
import uuid
from typing import TextIO

import orjson

from annotator.report.tables import Document, Rows
from annotator.text import inert_json

OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY


def render(doc: Document) -> str:
    out = io.StringIO()
    write(doc, out)
    return out.getvalue()


def write(doc: Document, out: TextIO) -> None:
    """The document as JSON, written to ``out`` a piece at a time (no raw control character, as
    :func:`annotator.text.json_text`)."""
    data = doc.as_dict()
    lazy: dict[bytes, Rows] = {}
    for section in data["sections"]:
        for table in section["tables"]:
            if isinstance(table["records"], Rows):
                marker = f"rows {uuid.uuid4().hex}"
                lazy[orjson.dumps(marker)] = table["records"]
                table["records"] = marker
    text = orjson.dumps(data, option=OPTIONS)
    for marker, rows in lazy.items():
        before, text = text.split(marker, 1)
        out.write(inert_json(before))
        line = before[before.rfind(b"\n") + 1:]
        pad = b"\n" + b" " * (len(line) - len(line.lstrip(b" ")))
        _write_rows(rows, pad, out)
    out.write(inert_json(text) + "\n")


def _write_rows(rows: Rows, pad: bytes, out: TextIO) -> None:
    """The records as the array orjson would write at this depth (``pad``: a newline and the
    indent of the line the array opens on)."""
    if not len(rows):
        out.write("[]")
        return
    out.write("[")
    for i, block in enumerate(rows.blocks()):
        inner = orjson.dumps(block, option=OPTIONS)[1:-2]  # "\n  {...},\n  {...}" without "[" and "\n]"
        out.write(inert_json((b"," if i else b"") + inner.replace(b"\n", pad)))
    out.write(inert_json(pad + b"]"))
