"""The stratified share estimator of an audit (judge-corrected and people-only prevalence):
its parts against statsmodels (the reference), its point estimate against Cochran's stratified
mean and against ppi-python's PPI with the judge recalibrated per verdict."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_confint

from annotator.report.stratified import Share, mover, share

ppi_py = pytest.importorskip("ppi_py")


@pytest.mark.parametrize(("x1", "n1", "x2", "n2"), [(12, 40, 3, 35), (0, 20, 4, 50), (9, 9, 1, 30)])
def test_mover_with_wilson_parts_is_newcombes_interval(x1, n1, x2, n2):
    parts = []
    for x, n in ((x1, n1), (x2, n2)):
        lo, hi = proportion_confint(x, n, method="wilson")
        parts.append(Share(x / n, lo, hi))
    d = mover([(1.0, parts[0]), (-1.0, parts[1])])
    lo, hi = confint_proportions_2indep(x1, n1, x2, n2, method="newcomb", compare="diff")
    assert (d.value, d.low, d.high) == pytest.approx((x1 / n1 - x2 / n2, lo, hi), abs=1e-12)


def test_a_simple_random_audit_of_a_large_population_is_agresti_coull():
    y = np.r_[np.ones(7), np.zeros(93)]
    s = share(y, np.zeros(100), np.zeros(10**9))
    lo, hi = proportion_confint(7, 100, method="agresti_coull")
    assert (s.value, s.low, s.high) == pytest.approx((0.07, lo, hi), abs=1e-7)


def test_no_positive_seen_still_leaves_room_above_zero():
    s = share(np.zeros(60), np.zeros(60), np.zeros(600))
    assert s.value == 0 and s.low == 0 and 0.03 < s.high < 0.08


def test_a_fully_audited_population_is_known_exactly():
    y = np.r_[np.ones(3), np.zeros(7)]
    s = share(y, np.zeros(10), np.zeros(10))
    assert (s.value, s.low, s.high) == (0.3, 0.3, 0.3)


def test_stratified_estimate_is_cochrans_stratified_mean():
    rng = np.random.default_rng(1)
    stratum_all = np.r_[np.zeros(900, int), np.ones(100, int)]
    stratum = np.r_[np.zeros(40, int), np.ones(40, int)]
    y = (rng.random(80) < np.where(stratum == 1, 0.5, 0.05)).astype(float)
    s = share(y, stratum, stratum_all)
    assert s.value == pytest.approx(0.9 * y[:40].mean() + 0.1 * y[40:].mean(), abs=1e-12)
    assert s.low < s.value < s.high
    assert np.isnan(share(y[:40], stratum[:40], stratum_all).value)  # a stratum with no audited row


def test_the_corrected_point_is_ppi_with_the_judge_recalibrated_per_verdict():
    rng = np.random.default_rng(3)
    truth = rng.random(4000) < 0.1
    judge = np.where(truth, rng.random(4000) < 0.7, rng.random(4000) < 0.05).astype(float)
    audited = rng.choice(4000, 300, replace=False)
    y, yhat = truth[audited].astype(float), judge[audited]
    s = share(y, np.zeros(300), np.zeros(4000), yhat, judge)
    recalibrated = {v: y[yhat == v].mean() for v in (0.0, 1.0)}
    f = np.vectorize(recalibrated.get)
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f(yhat), f(judge), lam=1.0)))
    assert s.value == pytest.approx(point, abs=1e-12)
    people = share(y, np.zeros(300), np.zeros(4000))
    assert s.width < people.width


def test_a_verdict_with_no_audited_row_falls_back_to_the_stratum():
    y = np.r_[np.ones(2), np.zeros(28)]
    verdict_all = np.r_[np.zeros(290), np.ones(10)]
    s = share(y, np.zeros(30), np.zeros(300), np.zeros(30), verdict_all)
    assert s == share(y, np.zeros(30), np.zeros(300))
