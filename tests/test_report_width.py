"""Readable at 100 columns: every table of a full report and agreement fits, no cell cropped.

Each table is rendered the way the terminal renderer prints it; rich's own column widths are
checked against every cell: a number or a short key must fit on one line; free text (titles,
mode lists) gets at least its cap and may end in an ellipsis beyond it (JSON and CSV hold it all).
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


@pytest.fixture
def labelled(sample_db):
    rng = np.random.default_rng(3)
    for tid in trajectory_ids(sample_db):
        for person in ("alice", "bob", "carol"):
            modes = rng.choice(TAX.mode_ids, size=int(rng.integers(0, 5)), replace=False)
            label_all(sample_db, tid, person, {str(m): int(rng.integers(0, 12)) for m in modes})
    return sample_db


def _check(doc) -> None:
    console = Console(width=WIDTH, record=True, file=io.StringIO(), color_system=None)
    for section in doc.sections:
        for table in section.tables:
            headers, rows = display(table)
            for rt in rich_tables(table, WIDTH):
                widths = rt._calculate_column_widths(console, console.options)
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


def test_every_table_of_a_full_report_fits_100_columns(labelled):
    doc = build_report(labelled, "alice", TAX, replicates=100)
    names = {t.name for s in doc.sections for t in s.tables}
    assert {"two_by_two", "compare_system", "onsets", "attributions", "cooccurrence", "logit"} <= names
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
