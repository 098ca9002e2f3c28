"""Markdown rendering: a header list and one pipe table per table.

Cells are escaped so that text from trajectories (titles, system names) cannot break a table
or inject markup or HTML into a rendered Markdown page.
"""

from __future__ import annotations

import re

from annotator.report.formatting import FINDINGS_TITLE, LEGEND, display, header_lines, heading, shown_note, title
from annotator.report.tables import Document
from annotator.text import inert

_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#!~])")


def escape(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    text = re.sub(r"\s+", " ", inert(text)).strip()
    return _SPECIAL.sub(r"\\\1", text.replace("&", "&amp;")).replace("\\<", "&lt;").replace("\\>", "&gt;")


def render(doc: Document) -> str:
    out = [f"# {title(doc)}", ""]
    if doc.findings:
        out += [f"## {FINDINGS_TITLE}", "", *(f"- {escape(f.text)}" for f in doc.findings), ""]
    for label, text in header_lines(doc.header):
        indent = "  " if label.startswith(" ") else ""  # a source's detail, under "left out"
        out.append(f"{indent}- **{escape(label.strip())}**: {escape(text)}")
    for section in doc.sections:
        out += ["", f"## {escape(section.title)}", ""]
        out += [f"_{escape(n)}_" for n in section.notes]
        for table in section.tables:
            headers, rows = display(table)
            out += ["", f"### {escape(table.title)}", ""]
            out.append("| " + " | ".join(escape(heading(h)) for h in headers) + " |")
            out.append("|" + "|".join("---" for _ in headers) + "|")
            for row in rows:
                out.append("| " + " | ".join(escape(c) for c in row) + " |")
            if note := shown_note(table):
                out += ["", f"{note}; all in the JSON or CSV output."]
            if table.notes:
                out.append("")
                out += [f"- {escape(n)}" for n in table.notes]
    out += ["", LEGEND, ""]
    return "\n".join(out)
