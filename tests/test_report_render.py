"""Renderings: hostile trajectory text stays inert, every format carries the same numbers."""

from __future__ import annotations

import csv
import io

import orjson
import pytest
from tests.report_data import add_trajectory, known_prevalence_db, label_all
from rich.console import Console

from annotator.report import render_csv, render_html, render_json, render_md, render_terminal
from annotator.report.agreement_report import build_agreement
from annotator.report.document import build_report
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()
HOSTILE = '<script>alert("x")</script><b>bold</b> [red]markup[/red] | pipe \x1b[31mred'


@pytest.fixture
def hostile_db(db):
    known_prevalence_db(db)
    add_trajectory(db, "evil", title=HOSTILE, system="<img src=x onerror=alert(1)>", outcome="failure")
    label_all(db, "evil", "alice", {"FM-1.1": 2})
    label_all(db, "evil", "bob", {"FM-1.1": 2})
    add_trajectory(db, "evil2", title="[red]x[/red]\x1b[2J", outcome="failure")
    label_all(db, "evil2", "alice", set())
    for tid in ("f00", "s00"):
        label_all(db, tid, "bob", {"FM-1.1"})
    return db


def test_html_escapes_trajectory_text(hostile_db):
    html = render_html.render(build_report(hostile_db, "alice", TAX, replicates=50))
    assert "<script" not in html.lower()
    assert "<b>bold" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert html.count("<svg") == 3  # heat map, failed-vs-successful bars, histogram
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # self-contained


def test_markdown_escapes_cells(hostile_db):
    md = render_md.render(build_report(hostile_db, "alice", TAX, replicates=0))
    line = next(ln for ln in md.splitlines() if "alert" in ln and ln.startswith("| evil"))
    assert "<script>" not in line and "&lt;script&gt;" in line
    assert line.count(" | ") == 6  # the pipe in the title did not add a column
    assert "\x1b" not in md


def test_terminal_shows_markup_and_escapes_as_text(hostile_db):
    buf = io.StringIO()
    render_terminal.render(build_report(hostile_db, "alice", TAX, replicates=0),
                           Console(file=buf, width=100, color_system=None))
    text = buf.getvalue()
    assert "\x1b" not in text and "[red]x[/red]\\x1b[2J" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_json_and_csv_carry_the_same_numbers(hostile_db):
    doc = build_report(hostile_db, "alice", TAX, replicates=50, row_limit=None)
    data = orjson.loads(render_json.render(doc))
    rows = list(csv.DictReader(io.StringIO(render_csv.render(doc))))
    prev = next(t for s in data["sections"] for t in s["tables"] if t["name"] == "prevalence")
    fm11 = next(r for r in prev["records"] if r["mode"] == "FM-1.1")
    csv_rows = [r for r in rows if r["table"] == "prevalence" and r["row"] == "0"]
    assert {r["column"]: r["value"] for r in csv_rows}["prevalence"] == str(fm11["prevalence"])
    assert data["header"]["taxonomy"]["version_hash"] == TAX.version_hash
    assert any(r["table"] == "header" and r["column"] == "seed" for r in rows)
    gaps = next(t for s in data["sections"] for t in s["tables"] if t["name"] == "failed_vs_successful")
    csv_gap = {r["column"]: r["value"] for r in rows if r["table"] == "failed_vs_successful" and r["row"] == "0"}
    assert set(csv_gap) == set(gaps["records"][0]) and csv_gap["failed_with"] == str(gaps["records"][0]["failed_with"])
    traj = next(t for s in data["sections"] for t in s["tables"] if t["name"] == "trajectories")
    assert len(traj["records"]) == 32 == traj["total_rows"]


def test_json_is_written_a_block_of_rows_at_a_time_as_one_document(hostile_db):
    """The streamed JSON is byte for byte orjson's of the whole document, control characters inert."""
    from annotator.report.tables import Rows
    from annotator.text import json_text

    add_trajectory(hostile_db, "c1", title="csi \x9b31m here", outcome="failure")
    label_all(hostile_db, "c1", "alice", set())
    doc = build_report(hostile_db, "alice", TAX, replicates=20, row_limit=None)
    listing = doc.table("trajectories")
    every = list(listing.records)
    listing.records = Rows(len(every), lambda start, end: every[start:end], block=5)  # several blocks
    doc.sections[-1].tables.append(type(listing)("empty", "none", ["a"], Rows(0, lambda a, b: [])))
    whole = doc.as_dict()
    for section in whole["sections"]:
        for table in section["tables"]:
            table["records"] = list(table["records"])
    text = render_json.render(doc)
    assert text == json_text(whole, orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY) + "\n"
    assert "\x9b" not in text and "csi \\u009b31m here" in text
    records = orjson.loads(text)["sections"][0]["tables"][0]["records"]
    assert len(records) == 33 and records == list(listing.records) and listing.records[2:4] == records[2:4]


def test_agreement_renders_in_every_format(hostile_db):
    doc = build_agreement(hostile_db, ["alice", "bob"], TAX, reference="alice", replicates=50)
    assert "Against the reference alice" in render_md.render(doc)
    assert "<table>" in render_html.render(doc)
    assert orjson.loads(render_json.render(doc))["kind"] == "agreement"
    assert render_csv.render(doc).startswith("table,row,column,value")


def test_agreement_ac1_and_human_ceiling_in_every_format(hostile_db):
    for tid in [f"f{i:02d}" for i in range(20)] + [f"s{i:02d}" for i in range(10)]:
        label_all(hostile_db, tid, "bob", {"FM-1.1"} if tid < "f14" else set())
        label_all(hostile_db, tid, "judge", {"FM-1.1"} if tid < "f12" else set(), provenance="imported", done=False)
    for sources, ceiling in ((["alice", "bob"], "interval"), (["alice", "judge"], "n/a")):
        doc = build_agreement(hostile_db, sources, TAX, reference=sources[0], replicates=50)
        buf = io.StringIO()
        render_terminal.render(doc, Console(file=buf, width=100, color_system=None))
        text = buf.getvalue()
        assert max(len(line) for line in text.splitlines()) <= 100
        # κ against the reference and the human ceiling are printed side by side (one table, not continued)
        part = text[text.index(f"Each source against {sources[0]}"):]
        part = part[:part.index("(continued)")]
        row = next(line for line in part.splitlines() if "all modes (pooled)" in line)
        pooled_ref = doc.table("reference").records[-1]
        kappa_ci = f"[{pooled_ref['kappa_ci_low']:.3f}, {pooled_ref['kappa_ci_high']:.3f}]"
        human_ci = ("n/a" if ceiling == "n/a" else
                    f"[{pooled_ref['human_kappa_ci_low']:.3f}, {pooled_ref['human_kappa_ci_high']:.3f}]")
        assert kappa_ci in row and human_ci in row.split(kappa_ci, 1)[1]
        assert "AC1 95% CI" in text and "n/a = not available" in text
        md, html = render_md.render(doc), render_html.render(doc)
        assert "AC1 95% CI" in md and "AC1 95% CI" in html and "human kappa 95% CI" in html
        assert ("| n/a | n/a |" in md) == (ceiling == "n/a")
        data = orjson.loads(render_json.render(doc))
        ref = next(t for s in data["sections"] for t in s["tables"] if t["name"] == "reference")
        pooled = ref["records"][-1]
        rows = list(csv.DictReader(io.StringIO(render_csv.render(doc))))
        last = str(len(ref["records"]) - 1)
        values = {r["column"]: r["value"] for r in rows if r["table"] == "reference" and r["row"] == last}
        assert values["human_kappa_na"] == (pooled["human_kappa_na"] or "")
        assert values["human_kappa"] == ("" if pooled["human_kappa"] is None else str(pooled["human_kappa"]))
        pair = next(t for s in data["sections"] for t in s["tables"] if t["name"] == "pairs")["records"][-1]
        assert pair["ac1_ci_low"] <= pair["ac1"] <= pair["ac1_ci_high"]
