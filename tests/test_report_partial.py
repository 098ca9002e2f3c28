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


def test_cleared_tags_and_modes_outside_the_codebook_are_told_apart(db):
    """A label outside the codebook is counted as such; a cleared tag (no verdict) is not a verdict
    and not outside; a trajectory whose labels are all cleared has no verdicts (not finished)."""
    from tests.report_data import MODES, add_trajectory, label_all

    from annotator.models import Label
    from annotator.store.labels import add_labels

    for tid in ("t0", "t1", "t2"):
        add_trajectory(db, tid)
        label_all(db, tid, "dataset", {"FM-1.1"}, provenance="imported", done=False)
    cleared = [Label(trajectory_id="t1", mode_id="FM-1.1", annotator="dataset", verdict=None, provenance="imported")]
    cleared += [Label(trajectory_id="t2", mode_id=m, annotator="dataset", verdict=None, provenance="imported")
                for m in MODES]
    add_labels(db, [*cleared, Label(trajectory_id="t0", mode_id="FM-9.9", annotator="dataset", verdict="present",
                                    provenance="imported")])
    frame = build(db, ["dataset"], load_taxonomy())
    lab = frame.labels["dataset"]
    assert lab.outside_codebook == 1
    assert frame.ids.tolist() == ["t0", "t1"] and frame.excluded["not finished by the source"] == 1
    assert lab.present[:, frame.mode_ids.index("FM-1.1")].tolist() == [True, False]
    assert not lab.known[1, frame.mode_ids.index("FM-1.1")] and lab.known[1].sum() == 13
