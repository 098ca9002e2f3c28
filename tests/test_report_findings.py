"""Key findings: every format opens with them, and a predictor is named only when the data support it."""

from __future__ import annotations

import io

import orjson
import pytest
from tests.report_data import add_trajectory, known_prevalence_db, label_all
from rich.console import Console

from annotator.report import render_csv, render_html, render_json, render_md, render_terminal
from annotator.report.document import build_report
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()


def _two(db):
    add_trajectory(db, "f", outcome="failure")
    add_trajectory(db, "s", outcome="success")
    label_all(db, "f", "alice", {"FM-3.2", "FM-1.1"})
    label_all(db, "s", "alice", {"FM-1.1"})


def test_one_failed_and_one_successful_name_no_predictor(db):
    _two(db)
    doc = build_report(db, "alice", TAX, replicates=200)
    found = {f.key: f for f in doc.findings}
    assert found["strongest_predictor"].text == (
        "no mode separates failed from successful runs at this sample size (1 failed, 1 succeeded)")
    assert found["strongest_predictor"].data["mode"] is None
    assert found["strongest_predictor"].data["candidate"]["mode"] == "FM-3.2"
    assert doc.header["strongest_predictor"] is None
    # all replicates of a one-trajectory group are equal: the interval is undefined, not [100, 100]
    top = doc.table("failed_vs_successful").records[0]
    assert top["mode"] == "FM-3.2" and top["gap_boot_low_pp"] is None and top["gap_boot_high_pp"] is None
    means = doc.table("mean_modes").records[0]
    assert means["mean_modes_failed_boot_low"] is None and means["mean_modes_failed"] == 2
    assert "failed 2.00 (n = 1, interval undefined)" in found["mean_modes"].text


def test_a_supported_predictor_is_named_with_its_interval_and_q(db):
    known_prevalence_db(db)
    doc = build_report(db, "alice", TAX, replicates=200, seed=1)
    found = {f.key: f for f in doc.findings}
    strongest = found["strongest_predictor"]
    q = {r["mode"]: r["bh_q"] for r in doc.table("two_by_two").records}["FM-1.1"]
    assert strongest.data["mode"] == "FM-1.1" and q < 0.05
    assert strongest.text.startswith("strongest predictor of failure: FM-1.1 ")
    assert f"BH q = {q:.2g}" in strongest.text and "gap +55.0 pp (95% CI [" in strongest.text
    assert found["counts"].text == "30 trajectories counted: 20 failed, 10 succeeded, 0 outcome unknown"
    assert found["mean_modes"].data["mean_modes_failed"] == pytest.approx(31 / 20)
    assert "failed 1.55 (n = 20, 95% boot [" in found["mean_modes"].text
    assert any(f.key == "top_modes" and f.data["modes"][0]["mode"] == "FM-1.1" for f in doc.findings)


def test_every_format_opens_with_the_findings(db):
    _two(db)
    doc = build_report(db, "alice", TAX, replicates=50)
    console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
    render_terminal.render(doc, console)
    text = console.export_text()
    assert text.index("Key findings") < text.index("sources") < text.index("Modes per trajectory")
    md = render_md.render(doc)
    assert md.index("## Key findings") < md.index("###") and "- no mode separates" in md
    html = render_html.render(doc)
    assert html.index("Key findings") < html.index("<table") and "<li>no mode separates" in html
    data = orjson.loads(render_json.render(doc))
    assert list(data)[:2] == ["kind", "findings"]
    assert [f["key"] for f in data["findings"]][-1] == "strongest_predictor"
    assert "findings,0,counts," in render_csv.render(doc)
