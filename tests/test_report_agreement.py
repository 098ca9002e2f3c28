"""Agreement: the MAD human sample (three annotators) with values asserted, and synthetic cases."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from report_data import MODES, add_trajectory, label_all
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from annotator.errors import ReportError
from annotator.importers.service import import_paths
from annotator.report.agreement_report import build_agreement
from annotator.store.labels import label_rows
from taxonomy import load_taxonomy

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
