"""`mast report`, `mast agreement` and `mast export` end to end on the MAD human sample."""

from __future__ import annotations

import csv
import io

import orjson
import pytest
from click.testing import CliRunner

from annotator.cli import main

HUMANS = "mad-human-1,mad-human-2,mad-human-3"


@pytest.fixture
def run(tmp_path, shared_data):
    db = tmp_path / "cli.db"

    def invoke(*args: str):
        return CliRunner().invoke(main, ["--db", str(db), *args], env={"COLUMNS": "100"})

    assert invoke("import", "-q", str(shared_data / "mad_human_sample")).exit_code == 0
    return invoke


def test_report_every_format(run, tmp_path):
    terminal = run("report", "-s", "consensus:mad-human-1,mad-human-2,mad-human-3", "--bootstrap", "200")
    assert terminal.exit_code == 0, terminal.output
    assert "MAST failure report" in terminal.stdout and "strongest predictor" in terminal.stdout
    assert "4 counted of 4" in terminal.stdout
    assert max(len(line) for line in terminal.stdout.splitlines()) <= 100
    for fmt in ("md", "html", "json", "csv"):
        out = tmp_path / f"report.{fmt}"
        result = run("report", "-s", "mad-human-1", "--format", fmt, "-o", str(out), "--bootstrap", "100")
        assert result.exit_code == 0, result.output
        assert f"wrote {out}" in result.stderr
    data = orjson.loads((tmp_path / "report.json").read_text())
    assert data["header"]["sources"][0]["name"] == "mad-human-1"
    assert len(next(t for s in data["sections"] for t in s["tables"] if t["name"] == "trajectories")["records"]) == 4
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert (tmp_path / "report.md").read_text().startswith("# MAST failure report")
    assert (tmp_path / "report.csv").read_text().startswith("table,row,column,value")


def test_agreement_json_matches_the_sample(run):
    result = run("agreement", "-s", HUMANS, "--reference", "mad-human-1", "--format", "json", "--seed", "3")
    assert result.exit_code == 0, result.output
    data = orjson.loads(result.stdout)
    agreement = next(t for s in data["sections"] for t in s["tables"] if t["name"] == "agreement")
    pooled = agreement["records"][-1]
    assert pooled["mode"] == "all modes (pooled)" and pooled["fleiss_kappa"] == pytest.approx(0.933193, abs=1e-6)
    assert data["header"]["seed"] == 3 and data["header"]["reference"] == "mad-human-1"


def test_export_then_import_restores_the_agreement(run, tmp_path):
    path = tmp_path / "humans.jsonl"
    assert run("export", "-s", HUMANS, "-o", str(path)).exit_code == 0
    wide = run("export", "-s", "mad-human-2", "--format", "wide-csv")
    assert len(list(csv.DictReader(io.StringIO(wide.stdout)))) == 4
    other = tmp_path / "other.db"
    imported = CliRunner().invoke(main, ["--db", str(other), "import", str(path)])
    assert imported.exit_code == 0, imported.output
    assert "159 labels" in imported.stdout
    again = CliRunner().invoke(main, ["--db", str(other), "agreement", "-s", HUMANS, "--format", "json"])
    first = run("agreement", "-s", HUMANS, "--format", "json")
    tables = [orjson.loads(r.stdout)["sections"][0]["tables"][0]["records"] for r in (first, again)]
    assert tables[0] == tables[1]


def test_errors_are_one_line(run):
    unknown = run("report", "-s", "nobody")
    assert unknown.exit_code != 0
    assert "no labels by 'nobody'" in unknown.output and len(unknown.output.strip().splitlines()) == 1
    single = run("agreement", "-s", "mad-human-1")
    assert single.exit_code != 0 and "at least two" in single.output
    bad_by = run("report", "-s", "mad-human-1", "--by", "colour")
    assert bad_by.exit_code != 0 and "unknown column(s) colour" in bad_by.output
