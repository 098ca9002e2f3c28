"""Every statistic on a small hand-computed case, cross-checked against the library on the same data."""

from __future__ import annotations

from concurrent.futures import CancelledError

import krippendorff
import numpy as np
import pytest
import statsmodels.api as sm
from scipy.stats import fisher_exact
from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support
from statsmodels.stats.contingency_tables import StratifiedTable
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from annotator.report import agreement as ag
from annotator.report import bootstrap
from annotator.report.alpha import alpha_from_coincidences, coincidences
from annotator.report.prevalence import wilson


def _pairs(a: int, b: int, c: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    y1 = np.array([1] * a + [1] * b + [0] * c + [0] * d)
    y2 = np.array([1] * a + [0] * b + [1] * c + [0] * d)
    return y1, y2


def test_wilson_hand_and_statsmodels():
    lo, hi = wilson(np.array([3]), np.array([10]))
    # Wilson: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), p = 0.3, n = 10
    z = 1.959963984540054
    centre, half = (0.3 + z * z / 20), z * np.sqrt(0.021 + z * z / 400)
    assert lo[0] == pytest.approx((centre - half) / (1 + z * z / 10))
    assert hi[0] == pytest.approx((centre + half) / (1 + z * z / 10))
    assert (lo[0], hi[0]) == pytest.approx(proportion_confint(3, 10, method="wilson"))
    assert np.isnan(wilson(np.array([0]), np.array([0]))[0][0])


def test_cohen_kappa_pa_na_hand_and_sklearn():
    # a=20 b=5 c=10 d=15: p_o = 0.7, p_e = (25·30 + 25·20)/50² = 0.5, κ = 0.4
    stats = ag.agreement_from_counts(*(np.array([x], dtype=float) for x in (20, 5, 10, 15)))
    assert stats["po"][0] == pytest.approx(0.7)
    assert stats["kappa"][0] == pytest.approx(0.4)
    assert stats["pa"][0] == pytest.approx(40 / 55)
    assert stats["na"][0] == pytest.approx(30 / 45)
    assert stats["pabak"][0] == pytest.approx(0.4)
    y1, y2 = _pairs(20, 5, 10, 15)
    assert ag.cohen(20, 5, 10, 15) == pytest.approx(0.4)
    assert cohen_kappa_score(y1, y2) == pytest.approx(0.4)
    assert np.isnan(ag.cohen(0, 0, 0, 7))


def test_kappa_paradox_rare_mode():
    # 100 trajectories, each rater flags one different trajectory: p_o 0.98, κ ≈ -0.010, PABAK 0.96
    stats = ag.agreement_from_counts(*(np.array([x], dtype=float) for x in (0, 1, 1, 98)))
    assert stats["po"][0] == pytest.approx(0.98)
    assert stats["kappa"][0] == pytest.approx(-0.0101, abs=1e-4)
    assert stats["pabak"][0] == pytest.approx(0.96)


def test_precision_recall_f1_hand_and_sklearn():
    # reference y1, source y2: tp=20, fn=5, fp=10 -> precision 2/3, recall 0.8, F1 = 40/55
    y1, y2 = _pairs(20, 5, 10, 15)
    p, r, f = ag.reference_scores(20, 5, 10, 15)
    assert (p, r, f) == pytest.approx((20 / 30, 20 / 25, 40 / 55))
    assert (p, r, f) == pytest.approx(precision_recall_fscore_support(y1, y2, average="binary")[:3])
    stats = ag.agreement_from_counts(*(np.array([x], dtype=float) for x in (20, 5, 10, 15)))
    assert (stats["precision"][0], stats["recall"][0], stats["pa"][0]) == pytest.approx((p, r, f))


def test_fleiss_hand_statsmodels_and_sums():
    # 3 raters; units with 3, 0, 2, 1 "present": P_i = 1, 1, 1/3, 1/3 -> P̄ = 2/3; p = 0.5 -> κ = 1/3
    ones = np.array([3, 0, 2, 1])
    data = np.array([[1, 1, 1], [0, 0, 0], [1, 1, 0], [1, 0, 0]])
    assert fleiss_kappa(aggregate_raters(data)[0], method="fleiss") == pytest.approx(1 / 3)
    raters = ag.Raters(ones=ones[:, None], decided=np.full((4, 1), 3), m=3)
    assert ag.fleiss_from_terms(raters.fleiss_terms().sum(axis=0), 1, 3)[0] == pytest.approx(1 / 3)
    # two modes: the pooled column treats every (unit × mode) cell as a unit
    rng = np.random.default_rng(8)
    y = rng.random((30, 2, 3)) < 0.4
    raters = ag.Raters.of(list(y.transpose(2, 0, 1)), [np.ones((30, 2), bool)] * 3)
    kappas = ag.fleiss_from_terms(raters.fleiss_terms().sum(axis=0), 2, 3)
    for j, cells in enumerate((y[:, 0], y[:, 1], y.reshape(60, 3))):
        assert kappas[j] == pytest.approx(fleiss_kappa(aggregate_raters(cells.astype(int))[0]), abs=1e-9)


def test_alpha_hand_and_reference_package():
    # 2 coders, units (1,1) (0,0) (1,0) (0,0): o11 = 2, o00 = 4, o10 = 1; n1 = 3, n0 = 5, n = 8
    # α = 1 - (n - 1) · 2·o10 / (2·n1·n0) = 1 - 7·2/30 = 8/15
    r = np.array([[1, 0, 1, 0], [1, 0, 0, 0]], dtype=float)
    terms = coincidences((r == 1).sum(axis=0), (r == 0).sum(axis=0))
    assert alpha_from_coincidences(*(x.sum() for x in terms)) == pytest.approx(8 / 15)
    assert krippendorff.alpha(reliability_data=r, level_of_measurement="nominal") == pytest.approx(8 / 15)
    rng = np.random.default_rng(3)
    for n_coders in (3, 4):
        data = rng.integers(0, 2, size=(n_coders, 40)).astype(float)
        data[rng.random(data.shape) < 0.15] = np.nan
        raters = ag.Raters.of(list(data[:, :, None] == 1), list(~np.isnan(data[:, :, None])))
        ours = ag.alpha_from_terms(raters.alpha_terms().sum(axis=0), 1)[0]
        assert ours == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def test_fisher_risk_and_odds_ratio_hand(db):
    from tests.report_data import add_trajectory, label_all

    from annotator.report.document import build_report
    from annotator.taxonomy import load_taxonomy

    # FM-1.1 present in 8 failed and 2 successful, absent in 1 failed and 5 successful
    cells = [("failure", True)] * 8 + [("success", True)] * 2 + [("failure", False)] * 1 + [("success", False)] * 5
    for i, (outcome, present) in enumerate(cells):
        add_trajectory(db, f"t{i:02d}", outcome=outcome)
        label_all(db, f"t{i:02d}", "alice", {"FM-1.1"} if present else set())
    doc = build_report(db, "alice", load_taxonomy(), replicates=0)
    row = next(r for r in doc.table("two_by_two").records if r["mode"] == "FM-1.1")
    assert row["fisher_p"] == pytest.approx(5 / 143)  # hypergeometric tail, margins (10, 6) × (9, 7)
    assert row["fisher_p"] == pytest.approx(fisher_exact([[8, 2], [1, 5]]).pvalue)
    assert row["risk_ratio"] == pytest.approx((8 / 10) / (1 / 6))
    assert row["odds_ratio"] == pytest.approx(20.0)
    ps = [r["fisher_p"] for r in doc.table("two_by_two").records if r["fisher_p"] is not None]
    qs = [r["bh_q"] for r in doc.table("two_by_two").records if r["bh_q"] is not None]
    assert qs == pytest.approx(list(multipletests(ps, method="fdr_bh")[1]))


def test_mantel_haenszel_hand_and_statsmodels():
    from annotator.report.predictors import mantel_haenszel

    # system A: a=6 b=2 c=3 d=9 (n 20); system B: a=4 b=4 c=2 d=10 (n 20)
    # OR_MH = (6·9/20 + 4·10/20) / (2·3/20 + 4·2/20) = (2.7 + 2) / (0.3 + 0.4) = 4.7 / 0.7
    present, failed, strata = [], [], []
    for system, (a, b, c, d) in (("A", (6, 2, 3, 9)), ("B", (4, 4, 2, 10))):
        for p_, f_, k in ((1, 1, a), (1, 0, b), (0, 1, c), (0, 0, d)):
            present += [p_] * k
            failed += [f_] * k
            strata += [0 if system == "A" else 1] * k
    rec = mantel_haenszel(np.array(present, bool), np.array(failed, bool), np.array(strata))
    assert rec["mh_odds_ratio"] == pytest.approx(4.7 / 0.7) and rec["mh_strata"] == 2
    st = StratifiedTable([np.array([[6, 2], [3, 9]]), np.array([[4, 4], [2, 10]])])
    assert (rec["mh_ci_low"], rec["mh_ci_high"]) == pytest.approx(st.oddsratio_pooled_confint())
    one = mantel_haenszel(np.array(present, bool), np.array(failed, bool), np.zeros(len(present), int))
    assert one["mh_odds_ratio"] is None  # one stratum: nothing to pool


def test_benjamini_hochberg_hand():
    # p = 0.01, 0.04, 0.03 -> ranked 0.01·3/1, 0.03·3/2, 0.04·3/3 -> monotone q = 0.03, 0.04, 0.04
    assert list(multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]) == pytest.approx([0.03, 0.04, 0.04])


def test_logit_matches_statsmodels_and_falls_back_on_separation(db):
    from tests.report_data import add_trajectory, label_all

    from annotator.report import predictors
    from annotator.report.frame import build
    from annotator.taxonomy import load_taxonomy

    rng = np.random.default_rng(0)
    x = rng.random((120, 2)) < 0.4
    y = rng.random(120) < 0.2 + 0.5 * x[:, 0]
    for i in range(120):
        add_trajectory(db, f"t{i:03d}", outcome="failure" if y[i] else "success")
        label_all(db, f"t{i:03d}", "alice", {m for m, on in zip(("FM-1.1", "FM-2.2"), x[i], strict=True) if on})
    frame = build(db, ["alice"], load_taxonomy())
    lab = frame.labels["alice"]
    fit = predictors.logistic(frame, lab.present, lab.known)
    assert fit.method == "maximum likelihood"
    ref = sm.Logit(y.astype(float), sm.add_constant(x.astype(float))).fit(disp=0)
    ors = {r["term"]: r["odds_ratio"] for r in fit.records}
    assert ors["FM-1.1"] == pytest.approx(np.exp(ref.params[1]), rel=1e-4)
    assert ors["FM-2.2"] == pytest.approx(np.exp(ref.params[2]), rel=1e-4)
    # 120 trajectories, 8 distinct (outcome, FM-1.1, FM-2.2) rows: fitted on those, weighted, the same errors
    rec = {r["term"]: r for r in fit.records}["FM-1.1"]
    assert (rec["ci_low"], rec["ci_high"]) == pytest.approx(tuple(np.exp(ref.conf_int()[1])), rel=1e-5)
    assert rec["p"] == pytest.approx(ref.pvalues[1], rel=1e-5)
    # FM-3.1 in failed trajectories only: separation -> penalised fit, said so
    for i in range(120):
        if y[i] and i % 3 == 0:
            label_all(db, f"t{i:03d}", "alice",
                      {m for m, on in zip(("FM-1.1", "FM-2.2"), x[i], strict=True) if on} | {"FM-3.1"})
    frame = build(db, ["alice"], load_taxonomy())
    lab = frame.labels["alice"]
    fit = predictors.logistic(frame, lab.present, lab.known)
    assert fit.method == "L2-penalised"
    assert any("separation: FM-3.1" in n for n in fit.notes)
    assert all(r["ci_low"] is None for r in fit.records)
    without = predictors.logistic(frame, lab.present, lab.known, exclude_categories=("FC3",))
    assert without.method == "maximum likelihood"
    assert "FM-3.1" not in {r["term"] for r in without.records}
    # FM-2.3 a copy of FM-1.1: no unique maximum-likelihood fit, said so
    twin = lab.present.copy()
    twin[:, frame.mode_ids.index("FM-2.3")] = twin[:, frame.mode_ids.index("FM-1.1")]
    collinear = predictors.logistic(frame, twin, lab.known, exclude_categories=("FC3",))
    assert collinear.method == "L2-penalised" and any(n.startswith("collinearity") for n in collinear.notes)


def test_logit_clusters_by_task_when_tasks_repeat(db):
    from tests.report_data import add_trajectory, label_all

    from annotator.report import predictors
    from annotator.report.frame import build
    from annotator.taxonomy import load_taxonomy

    rng = np.random.default_rng(4)
    x = rng.random((150, 2)) < 0.4
    y = rng.random(150) < 0.25 + 0.4 * x[:, 0]
    for i in range(150):  # 50 tasks, each run three times
        add_trajectory(db, f"t{i:03d}", outcome="failure" if y[i] else "success", task=f"task {i // 3}")
        label_all(db, f"t{i:03d}", "alice", {m for m, on in zip(("FM-1.1", "FM-2.2"), x[i], strict=True) if on})
    frame = build(db, ["alice"], load_taxonomy())
    lab = frame.labels["alice"]
    fit = predictors.logistic(frame, lab.present, lab.known)
    ref = sm.Logit(y.astype(float), sm.add_constant(x.astype(float))).fit(
        disp=0, cov_type="cluster", cov_kwds={"groups": np.arange(150) // 3})
    rec = {r["term"]: r for r in fit.records}["FM-1.1"]
    assert rec["odds_ratio"] == pytest.approx(np.exp(ref.params[1]), rel=1e-4)
    assert (rec["ci_low"], rec["ci_high"]) == pytest.approx(tuple(np.exp(ref.conf_int()[1])), rel=1e-4)
    assert any("clustered by task (50 tasks)" in n for n in fit.notes)


def test_bootstrap_is_seeded_and_resamples_whole_trajectories():
    blocks = list(bootstrap.weights(50, 100, seed=7))
    assert sum(len(b) for b in blocks) == 100
    assert all((b.sum(axis=1) == 50).all() for b in blocks)
    again = list(bootstrap.weights(50, 100, seed=7))
    assert all((a == b).all() for a, b in zip(blocks, again, strict=True))
    x = np.arange(50, dtype=float)[:, None]
    reps = bootstrap.sums(x, 100, seed=7)
    assert reps.shape == (100, 1)
    lo, hi, undefined = bootstrap.interval(reps / 50)
    assert lo[0] < 24.5 < hi[0] and undefined[0] == 0
    twins = np.column_stack([x[:, 0], x[:, 0] > 9, x[:, 0], x[:, 0] > 9, np.ones(50)])
    first, index = bootstrap.distinct_columns(twins)
    assert first.tolist() == [0, 1, 4] and index.tolist() == [0, 1, 0, 1, 2]
    plan = bootstrap.Plan()
    plan.add("a", twins[:, :2])
    plan.add("b", twins[:, 2:])
    together = plan.run(100, seed=7)
    assert (together["b"][:, :2] == together["a"]).all()
    assert together["a"] == pytest.approx(bootstrap.sums(twins[:, :2], 100, seed=7))


def test_bootstrap_replicates_are_the_seeded_generators_draws_in_order():
    """Each replicate counts the next n indices the seeded generator draws, however the
    replicates are cut into blocks and whichever thread counts them: the intervals of a seed
    stay the same."""
    n, replicates = 300, 700
    rng = np.random.default_rng(13)
    expected = np.vstack([np.bincount(rng.integers(0, n, size=n, dtype=np.int32), minlength=n)
                          for _ in range(replicates)])
    assert (np.vstack(list(bootstrap.weights(n, replicates, seed=13))) == expected).all()
    group = np.arange(n) % 7
    grouped = np.vstack(list(bootstrap.weights(n, replicates, seed=13, group=group, groups=7)))
    assert (grouped == np.vstack([np.bincount(group, weights=w, minlength=7) for w in expected])).all()


def test_resampling_started_on_its_thread_gives_the_run_and_stops_when_left():
    x = (np.random.default_rng(2).random((5000, 3)) < 0.3).astype(np.int8)
    plan = bootstrap.Plan()
    plan.add("x", x)
    with plan.start(200, seed=3) as resampling:
        assert (resampling.result()["x"] == plan.run(200, seed=3)["x"]).all()
    with plan.start(10**6, seed=3) as endless:
        pass
    with pytest.raises(CancelledError):
        endless.result()


def test_bootstrap_sums_are_the_same_whether_rows_are_grouped_or_mostly_distinct():
    """Few distinct rows are resampled by group; mostly distinct ones per trajectory: the same sums."""
    from annotator.report.row_groups import row_groups

    rng = np.random.default_rng(5)
    n = 4000
    few = (rng.random((n, 3)) < 0.3).astype(np.int8)
    many = np.column_stack([few, rng.integers(0, 1000, n)])
    for x in (few, many):
        share = len(row_groups([x[:, j] for j in range(x.shape[1])], n)[0]) / n
        assert (share > bootstrap.GROUPED_SHARE) == (x is many)
        every_row = np.vstack([w @ x.astype(np.float64) for w in bootstrap.weights(n, 50, seed=9)])
        assert (bootstrap.sums(x, 50, seed=9) == every_row).all()


def test_bootstrap_over_groups_of_equal_rows_equals_the_product_over_every_row():
    """Counting draws per group of identical rows gives every replicate sum of W @ X exactly."""
    from annotator.report.row_groups import row_groups

    rng = np.random.default_rng(3)
    n = 5000
    x = np.column_stack([rng.random((n, 6)) < 0.2, rng.integers(-3, 12, (n, 2)), rng.integers(0, 3, n) * 0.25])
    first, group = row_groups([x[:, j] for j in range(x.shape[1])], n)
    assert len(first) < n and (x[first][group] == x).all()
    assert len(np.unique(x, axis=0)) == len(first)
    every_row = np.vstack([w @ x for w in bootstrap.weights(n, 300, seed=4)])
    assert (bootstrap.sums(x, 300, seed=4) == every_row).all()
    grouped = np.vstack(list(bootstrap.weights(n, 300, seed=4, group=group, groups=len(first))))
    assert (grouped == np.vstack([np.bincount(group, weights=w, minlength=len(first))
                                  for w in np.vstack(list(bootstrap.weights(n, 300, seed=4)))])).all()
    plan = bootstrap.Plan()
    plan.add("flags", x[:, :6].astype(bool))
    plan.add("rest", x[:, 6:])
    together = plan.run(300, seed=4)
    assert (np.hstack([together["flags"], together["rest"]]) == every_row).all()


def test_bootstrap_count_formulas_match_the_libraries_on_resampled_data():
    """A replicate computed from weighted sums equals the library on the explicitly resampled rows."""
    rng = np.random.default_rng(5)
    n = 60
    y = (rng.random((n, 3)) < 0.35).astype(int)
    w = next(bootstrap.weights(n, 1, seed=11))[0].astype(int)
    rows = np.repeat(np.arange(n), w)
    pair = ag.pair_terms(y[:, 0:1] == 1, np.ones((n, 1), bool), y[:, 1:2] == 1, np.ones((n, 1), bool))
    counts = ag.split_counts(w @ pair, 1)
    assert ag.kappa_from_counts(*counts)[0] == pytest.approx(cohen_kappa_score(y[rows, 0], y[rows, 1]))
    raters = ag.Raters(ones=y.sum(axis=1, keepdims=True).astype(float), decided=np.full((n, 1), 3.0), m=3)
    fl = ag.fleiss_from_terms(w @ raters.fleiss_terms(), 1, 3)[0]
    assert fl == pytest.approx(fleiss_kappa(aggregate_raters(y[rows])[0]), rel=1e-5)
    derived = ag.fleiss_sums_from_alpha(w @ raters.alpha_terms(), 1, 3)  # every unit complete
    assert derived == pytest.approx(w @ raters.fleiss_terms(), rel=1e-5)
    every_pair = [w @ ag.pair_terms(y[:, i:i + 1] == 1, np.ones((n, 1), bool), y[:, j:j + 1] == 1,
                                    np.ones((n, 1), bool)) for i, j in ((0, 1), (0, 2), (1, 2))]
    assert ag.alpha_sums_from_pairs(every_pair, 1, 3) == pytest.approx(w @ raters.alpha_terms(), rel=1e-5)
    al = ag.alpha_from_terms(w @ raters.alpha_terms(), 1)[0]
    assert al == pytest.approx(krippendorff.alpha(reliability_data=y[rows].T.astype(float),
                                                  level_of_measurement="nominal"), rel=1e-5)


def test_onset_differences_and_cooccurrence_lift(db):
    from tests.report_data import add_trajectory, label_all

    from annotator.report.cooccurrence import cooccurrence
    from annotator.report.frame import build
    from annotator.taxonomy import load_taxonomy

    d = ag.onset_differences(np.array([[3.0, np.nan]]), np.array([[5.0, 1.0]]), np.array([[True, True]]))
    assert d[0, 0] == 2 and np.isnan(d[0, 1])
    # 4 trajectories: FM-1.1 in t0 t1, FM-1.2 in t0 -> together 1, lift = (1/4) / ((2/4)(1/4)) = 2
    for i, modes in enumerate(({"FM-1.1", "FM-1.2"}, {"FM-1.1"}, set(), set())):
        add_trajectory(db, f"t{i}")
        label_all(db, f"t{i}", "alice", modes)
    frame = build(db, ["alice"], load_taxonomy())
    lab = frame.labels["alice"]
    rec = next(r for r in cooccurrence(frame, lab.present, lab.known) if (r["mode"], r["with"]) == ("FM-1.1", "FM-1.2"))
    assert (rec["together"], rec["lift"]) == (1, 2.0)
