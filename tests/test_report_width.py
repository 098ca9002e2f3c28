"""Readable at 100 columns: every table of a full report and agreement fits, no cell cropped.

Each table is rendered the way the terminal renderer prints it; rich's own column widths are
checked against every cell: a number or a short key must fit on one line; free text (titles,
mode lists) gets at least its cap and wraps beyond it. Then every column of the printed table is
read back (its character span on every line below the header rule) and must hold the full text
of all its cells, line breaks and padding aside: an ellipsis, a cropped number or a lost piece
of a wrapped title fails. Titles and system names carry hostile text (markup, an escape
sequence, a URL longer than any column), which must come out as the inert characters it is.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from tests.report_data import label_all
from rich.console import Console

from annotator.report.agreement_report import build_agreement
from annotator.report.document import build_report
from annotator.report.formatting import TEXT_COLUMNS, display, heading
from annotator.report.render_terminal import render, rich_tables
from annotator.store.report_tables import trajectory_ids
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()
WIDTH = 100


#: Trajectory titles and a system name written by a model: markup, an escape, words longer than a column.
HOSTILE_TITLES = [
    "[bold red]FAILED[/bold red] deploy of the payment service after three retries and a rollback",
    "\x1b[31mred\x1b[0m \x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\ and [link=https://x.y]click[/link]",
    "see https://example.com/a/very/long/path/that/never/breaks/" + "x" * 60 + "?q=1&r=2 for the log",
    "Supercalifragilisticexpialidocious" * 3,
]
HOSTILE_SYSTEM = "[blink]sys[/blink]\x1b[2J"


@pytest.fixture
def labelled(sample_db):
    ids = trajectory_ids(sample_db)
    for tid, title in zip(ids, HOSTILE_TITLES, strict=False):
        sample_db.execute("UPDATE trajectories SET title = ? WHERE id = ?", [title, tid])
    sample_db.execute("UPDATE trajectories SET system = ? WHERE id = ?", [HOSTILE_SYSTEM, ids[-1]])
    sample_db.conn.commit()
    rng = np.random.default_rng(3)
    for tid in trajectory_ids(sample_db):
        for person in ("alice", "bob", "carol"):
            modes = rng.choice(TAX.mode_ids, size=int(rng.integers(0, 5)), replace=False)
            label_all(sample_db, tid, person, {str(m): int(rng.integers(0, 12)) for m in modes})
    return sample_db


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _printed_columns(rt, widths: list[int]) -> list[str]:
    """What each column of the printed table holds below its header rule, whitespace removed."""
    out = io.StringIO()
    Console(width=WIDTH, file=out, color_system=None, markup=False).print(rt)
    lines = out.getvalue().splitlines()
    rule = next(i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= set("─━ "))
    spans, x = [], 1  # one edge character, then each column and one separator
    for w in widths:
        spans.append((x, x + w))
        x += w + 1
    return [_squeezed("".join(line[a:b] for line in lines[rule + 1:])) for a, b in spans]


def _check(doc) -> None:
    console = Console(width=WIDTH, record=True, file=io.StringIO(), color_system=None)
    for section in doc.sections:
        for table in section.tables:
            headers, rows = display(table)
            for rt in rich_tables(table, WIDTH):
                widths = rt._calculate_column_widths(console, console.options)
                for column, printed in zip(rt.columns, _printed_columns(rt, widths), strict=True):
                    full = _squeezed("".join(c.plain for c in column.cells))
                    assert printed == full, (table.name, str(column.header), full, printed)
                assert sum(widths) + len(widths) + 1 <= WIDTH, table.name
                last = len(rt.columns) - 1
                for j, (column, width) in enumerate(zip(rt.columns, widths, strict=True)):
                    content = width - (j > 0) - (j < last)  # padding 1 each side, none at the outer edges
                    name = {heading(h): h for h in headers}[str(column.header)]
                    cells = [c.plain for c in column.cells]
                    if name in TEXT_COLUMNS:
                        assert content >= min(TEXT_COLUMNS[name], max(map(len, cells))), (table.name, name)
                    else:
                        assert content >= max(map(len, cells)), (table.name, column.header, cells)
    render(doc, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= WIDTH
    assert "…" not in text and "\x1b" not in text.replace("\\x1b", "")


def test_every_table_of_a_full_report_fits_100_columns(labelled):
    doc = build_report(labelled, "alice", TAX, replicates=100)
    names = {t.name for s in doc.sections for t in s.tables}
    assert {"two_by_two", "compare_system", "onsets", "attributions", "cooccurrence", "logit"} <= names
    shown = doc.table("trajectories").records  # the hostile titles and system are cells of this table
    assert set(HOSTILE_TITLES) <= {r["title"] for r in shown} and HOSTILE_SYSTEM in {r["system"] for r in shown}
    _check(doc)


def test_every_table_of_an_agreement_fits_100_columns(labelled):
    _check(build_agreement(labelled, ["alice", "bob", "carol"], TAX, reference="alice", replicates=100))


def test_tables_with_nothing_to_say_are_left_out_with_a_reason(labelled):
    doc = build_report(labelled, "alice", TAX, replicates=0)
    names = {t.name for s in doc.sections for t in s.tables}
    assert "prevalence_by_model" not in names and "compare_model" not in names  # every model is "-"
    notes = [n for s in doc.sections for n in s.notes]
    assert "By model: left out, every trajectory has the same model (-)." in notes
    assert all(r["mode"] != r["with"] for r in doc.table("cooccurrence").records)
    histogram = doc.table("onset_histogram").records
    assert histogram[-1]["onsets"] > 0
    rules = build_report(labelled, "mad-human-1", TAX, replicates=0)  # imported without onsets
    where = next(s for s in rules.sections if s.title == "Where things break")
    assert where.tables == [] and where.notes == ["Onset tables left out: the source recorded no onset step."]
