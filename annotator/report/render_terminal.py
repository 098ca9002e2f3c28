"""Terminal rendering: rich tables that stay readable at 100 columns.

A table wider than the console is split into several narrower ones that each repeat the
key columns (mode, group, pair), instead of being cropped; free text longer than its column
(titles, mode lists) wraps inside its cell, and nothing ends in an ellipsis. Every cell is a rich
``Text`` built from a plain string after :func:`annotator.text.inert` has made its control
characters visible (trajectory titles and system names are written by the data), so it is never
parsed as markup and wrapping it cannot create or part an escape sequence: a line break inside
``[bold red]`` or ``\x1b[31m`` splits plain characters.
"""

from __future__ import annotations

import re

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

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
from annotator.text import inert

_KEYS = ("trajectory", "pair", "source", "attributed_by", "system", "model", "benchmark", "mode", "with", "term",
         "rank")


def _need(header: str, cells: list[str]) -> int:
    """Width of a column's content: its widest cell (a text column at most its cap, wrapping
    beyond it) and at least the longest word of its header (headers wrap between words)."""
    longest_word = max((len(w) for w in header.split("_")), default=1)
    widest = max((len(c) for c in cells), default=1)
    if header in TEXT_COLUMNS:
        widest = min(widest, TEXT_COLUMNS[header])
    return max(longest_word, widest)


#: Printed columns besides the content: padding on both sides and the separator.
_GUTTER = 3


def _first_word(header: str) -> str:
    return re.split(r"[_ ]", header, maxsplit=1)[0]


def _units(headers: list[str], rest: list[int]) -> list[list[int]]:
    """The non-key columns in runs that stay together: a statistic and its interval columns."""
    units: list[list[int]] = []
    for i in rest:
        prev = units[-1][-1] if units else None
        if prev == i - 1 and headers[i].endswith(" CI") and _first_word(headers[i]) == _first_word(headers[prev]):
            units[-1].append(i)
        else:
            units.append([i])
    return units


def _column_groups(headers: list[str], rows: list[list[str]], width: int) -> list[list[int]]:
    """Column indices per printed table: the key columns, then as many others as fit (a
    statistic is never parted from its interval)."""
    widths = [_need(h, [r[i] for r in rows]) + _GUTTER for i, h in enumerate(headers)]
    keys = [i for i, h in enumerate(headers) if h in _KEYS]
    rest = [i for i in range(len(headers)) if i not in keys]
    base = sum(widths[i] for i in keys)
    groups, current, used = [], [], base
    for unit in _units(headers, rest):
        need = sum(widths[i] for i in unit)
        if current and used + need > width:
            groups.append(keys + current)
            current, used = [], base
        current += unit
        used += need
    groups.append(keys + current)
    return [sorted(g) for g in groups]


def _widths(headers: list[str], rows: list[list[str]], cols: list[int], width: int) -> dict[int, int]:
    """Each printed column's width: its content's, then widened towards its header on one line
    and its longest text unwrapped while the table still fits. Widths are fixed, so rich never
    crops a cell to fit."""
    need = {i: _need(headers[i], [r[i] for r in rows]) for i in cols}
    full = {i: max([len(heading(headers[i]))] + [len(r[i]) for r in rows]) for i in cols}
    spare = width - sum(w + _GUTTER for w in need.values())
    for i in sorted(cols, key=lambda c: full[c] - need[c]):  # the smallest shortfall first: most columns unwrapped
        grow = min(max(0, full[i] - need[i]), max(0, spare))
        need[i] += grow
        spare -= grow
    return need


def rich_tables(table: Table, width: int) -> list[RichTable]:
    """The table as one or more rich tables that fit ``width`` columns (the key columns repeated)."""
    headers, rows = display(table)
    width -= 2
    out = []
    for part, cols in enumerate(_column_groups(headers, rows, width)):
        caption = table.title if part == 0 else f"{table.title} (continued)"
        rt = RichTable(title=Text(inert(caption), style="bold"), title_justify="left", box=box.SIMPLE_HEAD,
                       pad_edge=False, padding=(0, 1), header_style="bold")
        for i, w in _widths(headers, rows, cols, width).items():
            if headers[i] in TEXT_COLUMNS:  # free text beyond its cap wraps, a word too long for it folds
                rt.add_column(Text(heading(headers[i])), overflow="fold", width=w)
            else:  # numbers never wrap or crop; their header wraps between words
                rt.add_column(Text(heading(headers[i])), justify="right", overflow="fold", width=w)
        for row in rows:
            rt.add_row(*(Text(inert(row[i])) for i in cols))
        if not rows:
            rt.add_row(*(Text("-") for _ in cols))
        out.append(rt)
    return out


def _print_table(table: Table, console: Console) -> None:
    for rt in rich_tables(table, console.width):
        console.print(rt)
    if note := shown_note(table):
        console.print(Text(f"{note}; all in --format json or csv", style="dim"))
    for note in table.notes:
        console.print(Text(inert(note), style="dim"))


def render(doc: Document, console: Console) -> None:
    """Print the whole document."""
    console.print(Text(title(doc), style="bold underline"))
    if doc.findings:
        console.print(Text(FINDINGS_TITLE, style="bold"))
        block = RichTable.grid(padding=(0, 1))
        block.add_column(width=1)
        block.add_column(overflow="fold")
        for finding in doc.findings:
            block.add_row(Text("•"), Text(inert(finding.text)))
        console.print(block)
        console.print()
    head = RichTable.grid(padding=(0, 2))
    head.add_column(style="bold", max_width=24, overflow="fold")
    head.add_column(overflow="fold")
    for label, text in header_lines(doc.header):
        head.add_row(Text(inert(label)), Text(inert(text)))
    console.print(head)
    for section in doc.sections:
        console.print()
        console.print(Text(section.title, style="bold reverse"))
        for note in section.notes:
            console.print(Text(inert(note), style="italic"))
        for table in section.tables:
            _print_table(table, console)
    console.print()
    console.print(Text(LEGEND, style="dim"))
