"""A labelled set with known failed/successful prevalences: gaps, ranking, modes per trajectory."""

from __future__ import annotations

import pytest
from tests.report_data import MODES, add_trajectory, known_prevalence_db, label_all

from annotator.errors import NotFound
from annotator.models import LabelRun
from annotator.report.document import build_report
from annotator.views import TrajectoryFilter
from annotator.store.review import set_review
from annotator.store.runs import create_run
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()


@pytest.fixture
def known_db(db):
    known_prevalence_db(db)
    return db


def test_gaps_ranking_and_modes_per_failed(known_db):
    doc = build_report(known_db, "alice", TAX, replicates=200, seed=1)
    gaps = {r["mode"]: r for r in doc.table("failed_vs_successful").records}
    assert gaps["FM-1.1"]["prevalence_failed"] == 0.75
    assert gaps["FM-1.1"]["prevalence_succeeded"] == 0.2
    assert gaps["FM-1.1"]["gap_pp"] == pytest.approx(55.0)
    assert gaps["FM-3.1"]["gap_pp"] == pytest.approx(20.0)
    assert gaps["FM-2.3"]["gap_pp"] == pytest.approx(0.0)
    assert gaps["FM-1.3"]["gap_pp"] == pytest.approx(-50.0)
    ranking = [r["mode"] for r in doc.table("failed_vs_successful").records]
    zero_gap = sorted(m for m in MODES if m not in ("FM-1.1", "FM-3.1", "FM-1.3"))
    assert ranking == ["FM-1.1", "FM-3.1", *zero_gap, "FM-1.3"]
    assert doc.header["strongest_predictor"] == "FM-1.1"
    means = doc.table("mean_modes").records[0]
    assert means["mean_modes_failed"] == pytest.approx(31 / 20)
    assert means["mean_modes_succeeded"] == pytest.approx(13 / 10)
    assert means["mean_modes_failed_boot_low"] <= 31 / 20 <= means["mean_modes_failed_boot_high"]
    by_system = {r["system"]: r for r in doc.table("mean_modes_by_system").records}
    # S1 holds failed f00-f09 (FM-1.1 ×10, FM-2.3 ×10, FM-3.1 ×4, FM-1.3 ×2 = 26 presences).
    assert by_system["S1"]["mean_modes_failed"] == pytest.approx(26 / 10)
    assert doc.header["counts"]["failed"] == 20 and doc.header["counts"]["succeeded"] == 10


def test_two_by_two_and_prevalence(known_db):
    doc = build_report(known_db, "alice", TAX, replicates=0)
    row = next(r for r in doc.table("two_by_two").records if r["mode"] == "FM-1.1")
    assert (row["present_failed"], row["present_succeeded"], row["absent_failed"], row["absent_succeeded"]) == (
        15, 2, 5, 8)
    # RR = (15/17) / (5/13); OR = 15*8 / (2*5)
    assert row["risk_ratio"] == pytest.approx((15 / 17) / (5 / 13), rel=1e-5)
    assert row["odds_ratio"] == pytest.approx(12.0)
    prev = {r["mode"]: r for r in doc.table("prevalence").records}
    assert prev["FM-1.1"]["count"] == 17 and prev["FM-1.1"]["n"] == 30
    assert prev["FC1"]["count"] == 21  # FM-1.1 or FM-1.3: failed f00-f14 (15), successful s00-s05 (6)
    hist = {r["modes"]: r["trajectories"] for r in doc.table("modes_per_trajectory").records}
    assert sum(hist.values()) == 30


def test_left_out_trajectories_are_counted_with_reasons(known_db):
    add_trajectory(known_db, "p00")
    label_all(known_db, "p00", "alice", {"FM-1.1"}, done=False)
    set_review(known_db, "p00", "alice", "in_progress")
    add_trajectory(known_db, "n00")
    doc = build_report(known_db, "alice", TAX, replicates=0, filters=TrajectoryFilter(system="S1"))
    counts = doc.header["counts"]
    assert counts["trajectories_counted"] == 15
    assert counts["left_out"] == {"outside the filters": 15, "not finished by the source": 2}
    assert doc.header["sources"][0]["not_finished"] == {"not marked done (in progress)": 1,
                                                        "not marked done (not started)": 1}


def test_run_source_counts_only_fully_labelled_trajectories(db):
    run = create_run(db, LabelRun(kind="llm", model="judge", status="completed"))
    for i in range(3):
        add_trajectory(db, f"t{i}")
    label_all(db, "t0", run.annotator, {"FM-1.1"}, provenance="llm", done=False)
    label_all(db, "t1", run.annotator, set(), provenance="llm", done=False, unknown=("FM-2.2",))
    from annotator.models import Label
    from annotator.store.labels import add_label

    add_label(db, Label(trajectory_id="t2", mode_id="FM-1.1", annotator=run.annotator, verdict="present",
                        provenance="llm"))
    doc = build_report(db, run.annotator, TAX, replicates=0)
    assert doc.header["sources"][0]["kind"] == "run"
    assert doc.header["counts"]["trajectories_counted"] == 2
    assert doc.header["sources"][0]["not_finished"] == {"labelled only some modes in the run": 1}
    prev = {r["mode"]: r for r in doc.table("prevalence").records}
    assert prev["FM-2.2"]["n"] == 1  # the unreadable verdict is left out of the denominator


def test_consensus_reports_ties_and_majorities(db):
    for t in ("t0", "t1"):
        add_trajectory(db, t)
    label_all(db, "t0", "ann", {"FM-1.1", "FM-1.2"})
    label_all(db, "t0", "bob", {"FM-1.1"})
    label_all(db, "t0", "cat", {"FM-1.1", "FM-1.2"})
    label_all(db, "t1", "ann", {"FM-2.1"})
    label_all(db, "t1", "bob", set())
    doc = build_report(db, "consensus", TAX, replicates=0)
    assert doc.header["counts"]["consensus_ties"] == 1  # t1 FM-2.1: 1 present vs 1 absent
    assert doc.table("consensus_ties").records == [{"trajectory": "t1", "mode": "FM-2.1"}]
    rows = {r["trajectory"]: r["present"] for r in doc.table("trajectories").records}
    assert rows == {"t0": "FM-1.1 FM-1.2", "t1": ""}
    prev = {r["mode"]: r for r in doc.table("prevalence").records}
    assert prev["FM-2.1"]["n"] == 1


def test_tag_filter_and_unknown_source(db):
    add_trajectory(db, "a", tags=["pilot"])
    add_trajectory(db, "b")
    for t in ("a", "b"):
        label_all(db, t, "alice", {"FM-1.1"})
    doc = build_report(db, "alice", TAX, replicates=0, filters=TrajectoryFilter(tag="pilot"))
    assert doc.header["counts"]["trajectories_counted"] == 1
    with pytest.raises(NotFound, match="sources with labels: alice"):
        build_report(db, "nobody", TAX)


def test_prevalence_homogeneity_by_system(known_db):
    from scipy.stats import chi2_contingency

    doc = build_report(known_db, "alice", TAX, replicates=0)
    rows = {r["mode"]: r for r in doc.table("homogeneity_by_system").records}
    # FM-1.1: S1 holds f00-f09 (10) and s00-s04 (2) -> 12 of 15; S2 holds f10-f14 (5) of 15
    expected = chi2_contingency([[12, 3], [5, 10]], correction=False)
    assert rows["FM-1.1"]["chi2"] == pytest.approx(expected.statistic, rel=1e-6)
    assert rows["FM-1.1"]["p"] == pytest.approx(expected.pvalue, rel=1e-6)
    assert (rows["FM-1.1"]["levels"], rows["FM-1.1"]["dof"]) == (2, 1)
    assert rows["FM-2.2"]["chi2"] is None  # never present: nothing to test


def test_first_onset_against_who_and_when_attributions(db, shared_data):
    from annotator.importers.importing import import_paths
    from annotator.store.attributions import attributions
    from annotator.store.steps import get_step

    files = [shared_data / "who_and_when" / f"Hand-Crafted_{i}.json" for i in (1, 2, 3)]
    assert not import_paths(db, files).failed
    blamed = {a.trajectory_id: a for a in attributions(db)}
    (t1, a1), (t2, a2), (t3, _) = sorted(blamed.items())
    label_all(db, t1, "alice", {"FM-1.1": a1.step, "FM-2.3": a1.step + 4})  # first onset on the step
    label_all(db, t2, "alice", {"FM-3.2": a2.step + 2})  # two steps late
    label_all(db, t3, "alice", set())  # no onset: not compared
    doc = build_report(db, "alice", TAX, replicates=0)
    row = doc.table("attributions").records[0]
    assert (row["attributed_by"], row["trajectories"]) == ("who-and-when", 2)
    assert (row["exact"], row["within_1"], row["within_3"], row["mean_abs_diff"]) == (0.5, 0.5, 1.0, 1.0)
    same = [get_step(db, t1, a1.step).agent == a1.agent, get_step(db, t2, a2.step + 2).agent == a2.agent]
    assert row["with_agent"] == 2 and row["same_agent"] == pytest.approx(sum(same) / 2)
    assert same[0]  # the blamed step is the blamed agent's


def test_who_and_when_step_and_agent_accuracy(db, shared_data):
    """Who&When's scores: every attributed trajectory counts, one without an onset is a miss."""
    from statsmodels.stats.proportion import proportion_confint

    from annotator.importers.importing import import_paths
    from annotator.store.attributions import attributions
    from annotator.store.steps import get_step

    files = [shared_data / "who_and_when" / f"Hand-Crafted_{i}.json" for i in (1, 2, 3)]
    assert not import_paths(db, files).failed
    (t1, a1), (t2, a2), (t3, _) = sorted({a.trajectory_id: a for a in attributions(db)}.items())
    label_all(db, t1, "alice", {"FM-1.1": a1.step})  # right step (and so the blamed agent's)
    label_all(db, t2, "alice", {"FM-3.2": a2.step + 2})  # two steps late
    label_all(db, t3, "alice", set())  # no onset: a miss
    row = build_report(db, "alice", TAX, replicates=0).table("attributions").records[0]
    assert (row["attributed"], row["step_n"], row["trajectories"]) == (3, 3, 2)
    assert row["step_accuracy"] == pytest.approx(1 / 3)
    lo, hi = proportion_confint(1, 3, alpha=0.05, method="wilson")
    assert (row["step_accuracy_ci_low"], row["step_accuracy_ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    late_same = get_step(db, t2, a2.step + 2).agent == a2.agent
    assert row["agent_n"] == 3 and row["agent_accuracy"] == pytest.approx((1 + late_same) / 3)
