"""Sources that cover some modes: a rules run reports, agrees and exports on the modes it covers."""

from __future__ import annotations

import orjson
from click.testing import CliRunner

from annotator.cli import main
from annotator.labelling.rules import DETECTORS
from annotator.report.document import build_report
from annotator.report.frame import build
from annotator.taxonomy import load_taxonomy

COVERED = sorted(DETECTORS)


def _rules_run(db_path, sample_db) -> None:
    r = CliRunner().invoke(main, ["--db", str(db_path), "prelabel", "--labeller", "rules", "-q"])
    assert r.exit_code == 0, r.output


def test_a_rules_run_is_reported_on_the_modes_it_covers(db_path, sample_db):
    _rules_run(db_path, sample_db)
    frame = build(sample_db, ["run:1"], load_taxonomy())
    assert list(frame.mode_ids) == COVERED
    assert frame.n == 13 and frame.labels["run:1"].present.shape == (13, len(COVERED))
    doc = build_report(sample_db, "run:1", load_taxonomy(), replicates=50)
    assert doc.header["modes"]["reported"] == COVERED
    assert len(doc.header["modes"]["not_covered"]) == 14 - len(COVERED)
    assert [r["mode"] for r in doc.table("prevalence").records if r["mode"].startswith("FM")] == COVERED
    r = CliRunner().invoke(main, ["--db", str(db_path), "report", "-s", "run:1"], env={"COLUMNS": "100"})
    assert r.exit_code == 0, r.output
    assert f"{len(COVERED)} of 14 reported, the ones the source covers" in " ".join(r.output.split())


def test_agreement_and_export_of_a_rules_run(db_path, sample_db, tmp_path):
    _rules_run(db_path, sample_db)
    r = CliRunner().invoke(main, ["--db", str(db_path), "agreement", "-s", "run:1", "-s", "mad-human-1",
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = orjson.loads(r.output)
    assert doc["header"]["modes"]["reported"] == COVERED
    out = tmp_path / "run1.jsonl"
    r = CliRunner().invoke(main, ["--db", str(db_path), "export", "-s", "run:1", "--format", "jsonl", "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = [orjson.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 13 * len(COVERED)
    assert {row["mode_id"] for row in rows} == set(COVERED)
    mad = orjson.loads(CliRunner().invoke(main, ["--db", str(db_path), "export", "-s", "run:1", "--format",
                                                 "mad-json"]).output)
    assert len(mad) == 13 and sum(v is None for v in mad[0]["mast_annotation"].values()) == 14 - len(COVERED)


def test_a_report_over_no_trajectories_does_not_crash(sample_db):
    from annotator.views import TrajectoryFilter

    doc = build_report(sample_db, "mad-human-1", load_taxonomy(), TrajectoryFilter(system="no such system"), replicates=20)
    assert doc.header["counts"]["trajectories_counted"] == 0
