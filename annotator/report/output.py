"""Where a report or an export goes: the text of each report format, and files that appear
whole or not at all.

The CLI only picks the destination: ``write`` renders a document in a format to a file or
stdout (JSON and CSV as they are made, so a million-row listing is never held whole; the
others from ``render_text``), and ``atomic_file`` is how both ``mast report -o`` and ``mast
export -o`` write, so an interrupted or failing write never leaves a truncated report or a
half export that looks complete.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.console import Console

from annotator.errors import ReportError
from annotator.text import inert_console

if TYPE_CHECKING:  # the CLI reads REPORT_FORMATS at start-up, before any table exists
    from annotator.report.tables import Document

#: The formats a report or an agreement document is rendered in.
REPORT_FORMATS = ("terminal", "md", "html", "json", "csv")
#: Columns of a terminal rendering written to a file (on screen it takes the terminal's width).
FILE_WIDTH = 100


def terminal_console(file: TextIO | None = None, width: int = FILE_WIDTH) -> Console:
    """The console a report is drawn on: plain text, never markup, every segment inert
    (``text.inert_console``); colour only on a terminal."""
    if file is None:
        return inert_console(soft_wrap=False, width=width)
    return inert_console(file=file, width=width, soft_wrap=False, color_system=None)


def render_text(doc: Document, fmt: str) -> str:
    """The document as text in ``fmt`` (one of REPORT_FORMATS); a terminal rendering is
    ``FILE_WIDTH`` columns wide and without colour, as written to a file."""
    if fmt == "terminal":
        from annotator.report import render_terminal

        buf = io.StringIO()
        render_terminal.render(doc, terminal_console(buf))
        return buf.getvalue()
    from annotator.report import render_csv, render_html, render_json, render_md

    renderers = {"md": render_md.render, "html": render_html.render, "json": render_json.render,
                 "csv": render_csv.render}
    if fmt not in renderers:
        raise ReportError(f"unknown report format {fmt!r}; choose from {', '.join(REPORT_FORMATS)}")
    return renderers[fmt](doc)


def write(doc: Document, fmt: str, out: TextIO) -> None:
    """The document in ``fmt`` (one of REPORT_FORMATS) written to ``out``; a terminal rendering as
    :func:`render_text` makes it."""
    from annotator.report import render_csv, render_json

    streamed = {"json": render_json.write, "csv": render_csv.write}
    if fmt in streamed:
        streamed[fmt](doc, out)
    else:
        out.write(render_text(doc, fmt))


@contextmanager
def atomic_file(path: str | Path) -> Iterator[TextIO]:
    """A text file written as ``<path>.partial`` and renamed to ``path`` once complete. On any
    error the partial file is removed and nothing appears at ``path``; an OSError is a
    ReportError naming the file."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as fh:
            yield fh
        partial.replace(path)
    except OSError as exc:
        raise ReportError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    finally:
        partial.unlink(missing_ok=True)
