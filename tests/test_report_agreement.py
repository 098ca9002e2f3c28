"""Agreement: the MAD human sample (three annotators) with values asserted, and synthetic cases."""

from __future__ import annotations

import re

import krippendorff
import numpy as np
import pytest
from tests.report_data import MODES, add_trajectory, label_all
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from annotator.errors import ReportError
from annotator.importers.importing import import_paths
from annotator.models import Label
from annotator.report import agreement as ag
from annotator.report import gwet
from annotator.report.agreement_report import build_agreement
from annotator.report.formatting import display
from annotator.report.sources import resolve
from annotator.store.labels import add_labels, label_rows
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()
HUMANS = ["mad-human-1", "mad-human-2", "mad-human-3"]


@pytest.fixture
def mad_db(db, shared_data):
    summary = import_paths(db, [shared_data / "mad_human_sample"])
    assert not summary.failed
    return db


def _cells(db) -> dict[tuple[str, str], dict[str, int]]:
    """(trajectory, mode) -> annotator -> 1/0, straight from the stored labels."""
    out: dict = {}
    for tid, annotator, mode, verdict, _ in label_rows(db, HUMANS):
        if verdict in ("present", "absent"):
            out.setdefault((tid, mode), {})[annotator] = int(verdict == "present")
    return out


def test_mad_human_sample_agreement_values(mad_db):
    doc = build_agreement(mad_db, HUMANS, TAX, reference="mad-human-1", replicates=500, seed=0)
    assert doc.header["counts"]["trajectories_counted"] == 4
    rows = {r["mode"]: r for r in doc.table("agreement").records}
    pooled = rows["all modes (pooled)"]
    # 4 trajectories × 14 modes, 3 cells missing (Round 1 codes with no final id): 53 units
    assert pooled["units"] == 53 and pooled["positives"] == 14
    assert all(not r["estimable"] for m, r in rows.items() if m != "all modes (pooled)")
    assert all(r["fleiss_kappa"] is None for m, r in rows.items() if m != "all modes (pooled)")
    cells = _cells(mad_db)
    complete = [v for v in cells.values() if len(v) == 3]
    data = np.array([[v[a] for a in HUMANS] for v in complete])
    assert pooled["fleiss_kappa"] == pytest.approx(fleiss_kappa(aggregate_raters(data)[0]), abs=1e-6)
    assert pooled["fleiss_kappa"] == pytest.approx(0.933193, abs=1e-6)
    assert pooled["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data.T.astype(float), level_of_measurement="nominal"), abs=1e-6)
    assert pooled["alpha"] == pytest.approx(0.933613, abs=1e-6)
    assert pooled["fleiss_ci_low"] < pooled["fleiss_kappa"] <= pooled["fleiss_ci_high"]
    pairs = {(r["pair"], r["mode"]): r for r in doc.table("pairs").records}
    p12 = pairs[("mad-human-1 ~ mad-human-2", "all modes (pooled)")]
    # a = 12 both present, b = 2 only annotator 1, c = 0, d = 39: p_o = 51/53,
    # p_e = (14·12 + 39·41)/53², κ = (p_o - p_e)/(1 - p_e)
    po, pe = 51 / 53, (14 * 12 + 39 * 41) / 53**2
    assert p12["p_o"] == pytest.approx(po, abs=1e-6)
    assert p12["kappa"] == pytest.approx((po - pe) / (1 - pe), abs=1e-6)
    assert p12["kappa"] == pytest.approx(cohen_kappa_score(data[:, 0], data[:, 1]), abs=1e-6)
    assert p12["pa"] == pytest.approx(24 / 26, abs=1e-6)
    assert pairs[("mad-human-1 ~ mad-human-3", "all modes (pooled)")]["kappa"] == 1.0
    ref = {(r["source"], r["mode"]): r for r in doc.table("reference").records}
    r2 = ref[("mad-human-2", "all modes (pooled)")]
    assert (r2["support"], r2["predicted"], r2["precision"], r2["recall"]) == (14, 12, 1.0, pytest.approx(12 / 14))
    assert r2["specificity"] == 1.0  # 39 cells both absent, none only mad-human-2
    fm32 = rows["FM-3.2"]
    assert (fm32["units"], fm32["positives"], fm32["p_o"]) == (4, 3, pytest.approx(5 / 6))


def test_rare_modes_not_estimable_and_onsets(db):
    rng = np.random.default_rng(2)
    for i in range(60):
        tid = add_trajectory(db, f"t{i:02d}", steps=20)
        base = {"FM-1.3": 5} if i < 25 else {}
        other = dict(base)
        if i < 25 and i % 5 == 0:
            other = {"FM-1.3": 7}  # 5 onsets 2 steps apart
        if i < 3:
            base["FM-2.4"] = 1  # rare: 3 positives
        if rng.random() < 0.1:
            other["FM-2.2"] = 4
        label_all(db, tid, "alice", base)
        label_all(db, tid, "judge", other, provenance="imported", done=False)
    doc = build_agreement(db, ["alice", "judge"], TAX, reference="alice", replicates=300, seed=3, tolerance=1)
    pairs = {r["mode"]: r for r in doc.table("pairs").records}
    assert pairs["FM-1.3"]["estimable"] and pairs["FM-1.3"]["kappa"] == 1.0
    assert not pairs["FM-2.4"]["estimable"] and pairs["FM-2.4"]["kappa"] is None
    assert pairs["FM-2.4"]["p_o"] == pytest.approx(57 / 60)
    onsets = {r["mode"]: r for r in doc.table("onsets").records}
    assert onsets["FM-1.3"]["both_with_onset"] == 25
    assert onsets["FM-1.3"]["exact"] == pytest.approx(20 / 25)
    assert onsets["FM-1.3"]["within_1"] == pytest.approx(20 / 25)
    assert onsets["FM-1.3"]["mean_abs_diff"] == pytest.approx(10 / 25)
    curve = {r["within_steps"]: r["share"] for r in doc.table("onset_curve").records}
    assert curve[1] == pytest.approx(20 / 25) and curve[2] == 1.0
    again = build_agreement(db, ["alice", "judge"], TAX, reference="alice", replicates=300, seed=3, tolerance=1)
    assert again.table("pairs").records == doc.table("pairs").records


def test_agreement_needs_two_sources(db):
    add_trajectory(db, "t0")
    label_all(db, "t0", "alice", set())
    with pytest.raises(ReportError, match="at least two"):
        build_agreement(db, ["alice"], TAX)
    assert len(MODES) == 14


def test_three_complete_sources_fleiss_interval(db):
    rng = np.random.default_rng(8)
    truth = rng.random((40, 2)) < 0.4
    names = ["ann", "bob", "cat"]
    data = []
    for i in range(40):
        tid = add_trajectory(db, f"t{i:02d}")
        row = []
        for name in names:
            seen = truth[i] ^ (rng.random(2) < 0.1)
            label_all(db, tid, name, {m for m, on in zip(("FM-1.1", "FM-2.2"), seen, strict=True) if on})
            row.append(int(seen[0]))
        data.append(row)
    doc = build_agreement(db, names, TAX, replicates=400, seed=2)
    fm11 = next(r for r in doc.table("agreement").records if r["mode"] == "FM-1.1")
    assert fm11["fleiss_kappa"] == pytest.approx(fleiss_kappa(aggregate_raters(np.array(data))[0]), abs=1e-6)
    assert fm11["fleiss_ci_low"] < fm11["fleiss_kappa"] < fm11["fleiss_ci_high"]
    assert fm11["alpha_ci_low"] < fm11["alpha"] < fm11["alpha_ci_high"]


def test_gwet_ac1_hand_computed():
    # The kappa paradox (STATISTICS.md): 100 trajectories, each rater flags one different one.
    # a = 0, b = 1, c = 1, d = 98: p_o = 0.98, π = (0 + 1 + 1) / 200 = 0.01,
    # p_e = 2 · 0.01 · 0.99 = 0.0198, AC1 = (0.98 − 0.0198) / (1 − 0.0198) = 0.9602 / 0.9802
    assert gwet.ac1_two_raters(0, 1, 1, 98) == pytest.approx(0.9602 / 0.9802)
    assert gwet.ac1_two_raters(0, 1, 1, 98) == pytest.approx(0.9796, abs=1e-4)  # irrCAC 0.4.4 CAC(df).gwet()
    assert ag.cohen(0, 1, 1, 98) == pytest.approx(-0.010, abs=5e-4)
    # Three raters, five units with 3, 0, 2, 1, 0 saying present: per-unit agreement 1, 1, 1/3, 1/3, 1,
    # p_a = 11/15; π = mean(1, 0, 2/3, 1/3, 0) = 2/5, p_e = 2 · 2/5 · 3/5 = 12/25,
    # AC1 = (11/15 − 12/25) / (13/25) = 19/39 (irrCAC: 0.48718)
    ones = np.array([3, 0, 2, 1, 0])
    agreement = ((ones * (ones - 1) + (3 - ones) * (2 - ones)) / 6).sum()
    assert agreement == pytest.approx(11 / 3)
    assert gwet.ac1_many_raters(5, agreement, ones.sum(), 3) == pytest.approx(19 / 39)
    # Vectorised over replicates, and never undefined: p_e is at most 1/2
    assert gwet.ac1(np.array([0.5, 1.0]), np.array([0.5, 0.0])).tolist() == [0.0, 1.0]


def test_kappa_paradox_through_the_agreement(db):
    for i in range(100):
        tid = add_trajectory(db, f"t{i:03d}")
        label_all(db, tid, "alice", {"FM-2.4"} if i == 0 else set())
        label_all(db, tid, "bob", {"FM-2.4"} if i == 1 else set())
    doc = build_agreement(db, ["alice", "bob"], TAX, replicates=200, seed=1)
    pair = next(r for r in doc.table("pairs").records if r["mode"] == "FM-2.4")
    assert (pair["p_o"], pair["pabak"], pair["kappa"], pair["estimable"]) == (0.98, pytest.approx(0.96), None, False)
    assert pair["ac1"] == pytest.approx(0.9602 / 0.9802, abs=1e-6)  # given although κ is not estimable
    assert pair["ac1_ci_low"] <= pair["ac1"] <= pair["ac1_ci_high"] <= 1
    multi = next(r for r in doc.table("agreement").records if r["mode"] == "FM-2.4")
    assert (multi["ac1"], multi["ac1_ci_low"], multi["ac1_ci_high"]) == (pair["ac1"], pair["ac1_ci_low"],
                                                                          pair["ac1_ci_high"])


def test_mad_human_sample_ac1(mad_db):
    doc = build_agreement(mad_db, HUMANS, TAX, replicates=300, seed=0)
    rows = {r["mode"]: r for r in doc.table("agreement").records}
    data = np.array([[v[a] for a in HUMANS] for v in _cells(mad_db).values() if len(v) == 3])
    ones = data.sum(axis=1)
    p_a = ((ones * (ones - 1) + (3 - ones) * (2 - ones)) / 6).mean()
    pi = (ones / 3).mean()
    pe = 2 * pi * (1 - pi)
    pooled = rows["all modes (pooled)"]
    assert pooled["ac1"] == pytest.approx((p_a - pe) / (1 - pe), abs=1e-6)
    assert pooled["ac1"] == pytest.approx(0.95965, abs=1e-5)  # irrCAC 0.4.4, CAC(units × raters).gwet()
    assert pooled["ac1_ci_low"] <= pooled["ac1"] <= pooled["ac1_ci_high"]
    assert rows["FM-1.1"]["ac1"] == pytest.approx(10 / 13, abs=1e-6)  # irrCAC: 0.76923
    assert rows["FM-3.2"]["ac1"] == pytest.approx(0.7, abs=1e-6)  # irrCAC: 0.7
    pairs = {(r["pair"], r["mode"]): r for r in doc.table("pairs").records}
    p12 = pairs[("mad-human-1 ~ mad-human-2", "all modes (pooled)")]
    # a = 12, b = 2, c = 0, d = 39: π = 26/106
    po, pi = 51 / 53, 26 / 106
    assert p12["ac1"] == pytest.approx((po - 2 * pi * (1 - pi)) / (1 - 2 * pi * (1 - pi)), abs=1e-6)
    assert p12["ac1"] == pytest.approx(0.94008, abs=1e-5)  # irrCAC
    assert pairs[("mad-human-1 ~ mad-human-2", "FM-1.1")]["ac1"] == pytest.approx(0.68, abs=1e-6)  # irrCAC


def _people_and_judge(db, n: int = 60) -> None:
    """alice and bob (people) and an imported judge set, FM-1.1 in about 40% with some disagreement."""
    rng = np.random.default_rng(4)
    for i in range(n):
        tid = add_trajectory(db, f"t{i:02d}")
        truth = rng.random() < 0.4
        for name, flip, kind in (("alice", 0.05, "human"), ("bob", 0.1, "human"), ("judge", 0.2, "imported")):
            seen = truth ^ (rng.random() < flip)
            label_all(db, tid, name, {"FM-1.1"} if seen else set(), provenance=kind, done=kind == "human")


def test_human_ceiling_next_to_the_judge(db):
    _people_and_judge(db)
    doc = build_agreement(db, ["judge", "alice", "bob"], TAX, reference="alice", replicates=300, seed=5)
    assert [(s["name"], s["human"]) for s in doc.header["sources"]] == [
        ("alice", True), ("judge", False), ("bob", True)]
    pair = next(r for r in doc.table("pairs").records if r["pair"] == "alice ~ bob" and r["mode"] == "FM-1.1")
    ref = {(r["source"], r["mode"]): r for r in doc.table("reference").records}
    for source in ("judge", "bob"):
        row = ref[(source, "FM-1.1")]
        # One human pair: the ceiling is that pair's κ, on the same bootstrap replicates
        assert (row["human_kappa"], row["human_kappa_ci_low"], row["human_kappa_ci_high"]) == (
            pair["kappa"], pair["kappa_ci_low"], pair["kappa_ci_high"])
        assert row["human_estimable"] and row["human_kappa_na"] is None
    assert ref[("judge", "FM-1.1")]["kappa"] < ref[("judge", "FM-1.1")]["human_kappa"]
    assert ref[("judge", "FM-2.4")]["human_kappa"] is None and ref[("judge", "FM-2.4")]["human_estimable"] is False
    note = doc.table("reference").notes[0]
    assert "1 pairs of human sources (alice, bob)" in note


def test_human_ceiling_not_available_with_one_human(db):
    _people_and_judge(db, n=30)
    doc = build_agreement(db, ["alice", "judge"], TAX, reference="judge", replicates=100, seed=5)
    rows = doc.table("reference").records
    assert all(r["human_kappa"] is None and r["human_kappa_na"] == "only one human source (alice) in the comparison"
               for r in rows)
    assert doc.table("reference").notes[0].startswith("human kappa (the human ceiling): n/a, only one human source")
    headers, cells = display(doc.table("reference"))
    assert headers[4:6] == ["human_kappa", "human_kappa 95% CI"] and cells[0][4:6] == ["n/a", "n/a"]


def test_human_ceiling_over_the_mad_annotators(mad_db):
    doc = build_agreement(mad_db, HUMANS, TAX, reference="mad-human-1", replicates=300, seed=0)
    assert all(s["human"] for s in doc.header["sources"])
    pooled = {r["source"]: r for r in doc.table("reference").records if r["mode"] == "all modes (pooled)"}
    kappas = [r["kappa"] for r in doc.table("pairs").records if r["mode"] == "all modes (pooled)"]
    assert pooled["mad-human-2"]["human_kappa"] == pytest.approx(np.mean(kappas), abs=1e-6)
    low, high = pooled["mad-human-2"]["human_kappa_ci_low"], pooled["mad-human-2"]["human_kappa_ci_high"]
    assert low <= pooled["mad-human-2"]["human_kappa"] <= high


def test_which_sources_are_human(mad_db):
    _people_and_judge(mad_db, n=2)
    add_labels(mad_db, [Label(trajectory_id="t00", mode_id="FM-1.1", annotator="mad-llm", verdict="present",
                              provenance="imported", extra={"source": "mad"})])
    names = ("alice", "judge", "mad-llm", "mad-human-2", "consensus")
    assert [resolve(mad_db, s).human for s in names] == [True, False, False, True, True]


def test_intervals_over_one_trajectory_are_undefined_not_certain(db):
    """Every bootstrap replicate of one trajectory redraws it: each interval would be a point."""
    add_trajectory(db, "only", steps=8)
    label_all(db, "only", "alice", {"FM-1.1": 2, "FM-2.3": 5})
    label_all(db, "only", "bob", {"FM-1.1": 2, "FM-3.1": 4})
    label_all(db, "only", "carol", {"FM-1.1": 3, "FM-2.3": 5})
    doc = build_agreement(db, ["alice", "bob", "carol"], TAX, reference="alice", replicates=200, seed=0)
    assert doc.header["counts"]["trajectories_counted"] == 1
    bounds = {(t.name, c): r[c] for s in doc.sections for t in s.tables for r in t.records for c in t.columns
              if c.endswith(("_ci_low", "_ci_high")) or c in ("ci_low", "ci_high")}
    assert {name for name, _ in bounds} >= {"agreement", "pairs", "reference", "onset_curve"}
    assert all(v is None for v in bounds.values()), {k: v for k, v in bounds.items() if v is not None}
    curve = doc.table("onset_curve").records
    assert curve[0]["share"] is not None  # the point is given, only its interval is withheld
    headers, rows = display(doc.table("onset_curve"))
    assert [row[headers.index("95% CI")] for row in rows] == ["-"] * len(rows)  # shown as not defined


def test_a_database_in_a_folder_named_with_uri_characters_is_read_in_parallel(tmp_path):
    """Parallel readers open the file by URI: a folder named with ?, # and % must not break them."""
    from annotator.store import open_db

    from annotator.report.render_json import render

    rendered = []
    for name in ("plain", "odd?name#and%20more"):
        folder = tmp_path / name
        folder.mkdir()
        db = open_db(folder / "mast.db")
        for i in range(6):
            add_trajectory(db, f"t{i}")
            label_all(db, f"t{i}", "alice", {"FM-1.1"} if i % 2 else set())
            label_all(db, f"t{i}", "bob", {"FM-1.1"} if i % 3 else set())
        doc = build_agreement(db, ["alice", "bob"], load_taxonomy(), replicates=0)
        rendered.append(re.sub(r'"\d{4}-\d\d-\d\dT[\d:.+]+"', '"time"', render(doc)))  # when it was made
        db.close()
    assert rendered[0] == rendered[1]
