"""JSON rendering: the whole document with every number, as the statistics produced it."""

from __future__ import annotations

import orjson

from annotator.report.tables import Document


def render(doc: Document) -> str:
    return orjson.dumps(doc.as_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY).decode() + "\n"
