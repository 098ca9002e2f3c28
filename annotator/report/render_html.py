"""HTML rendering: one self-contained file (inline CSS and SVG, no scripts, no external assets).

Jinja2 with autoescape on: every value, including trajectory titles and system names written
by the data, is escaped, so a ``<script>`` in a trajectory shows as text; control characters
(an escape sequence in a title) are shown as ``\\x1b`` rather than written raw.
"""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from annotator.text import inert
from annotator.report.charts import charts
from annotator.report.formatting import (
    FINDINGS_TITLE,
    LEGEND,
    TEXT_COLUMNS,
    display,
    header_lines,
    heading,
    shown_note,
    title,
)
from annotator.report.tables import Document, Table

_ENV = Environment(
    loader=FileSystemLoader(Path(__file__).with_name("templates")),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=lambda value: inert(value) if isinstance(value, str) and not isinstance(value, Markup) else value,
)


def _table(table: Table) -> dict:
    headers, rows = display(table)
    return {"title": table.title, "notes": table.notes, "rows": rows, "shown_note": shown_note(table),
            "columns": [(heading(h), "text" if h in TEXT_COLUMNS else "num") for h in headers]}


def render(doc: Document) -> str:
    sections = [{"title": s.title, "notes": s.notes, "tables": [_table(t) for t in s.tables]} for s in doc.sections]
    return _ENV.get_template("report.html.j2").render(
        title=title(doc), header=header_lines(doc.header), sections=sections, charts=charts(doc),
        legend=LEGEND, findings_title=FINDINGS_TITLE, findings=[f.text for f in doc.findings],
    )
