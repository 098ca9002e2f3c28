"""JSON rendering: the whole document with every number, as the statistics produced it."""

from __future__ import annotations

import orjson

from annotator.text import json_text
from annotator.report.tables import Document


def render(doc: Document) -> str:
    return json_text(doc.as_dict(), orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + "\n"
