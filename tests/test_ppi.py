"""The prediction-powered estimators against the authors' package ``ppi-python`` (the reference),
and their validity by simulation: a synthetic truth, a judge of known per-mode error rates."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.report import ppi

ppi_py = pytest.importorskip("ppi_py")


def _data(seed: int, n: int = 150, big_n: int = 3000, k: int = 3):
    rng = np.random.default_rng(seed)
    truth = rng.random((big_n, k)) < np.array([0.05, 0.2, 0.45])[:k]
    flip = rng.random((big_n, k)) < np.array([0.1, 0.25, 0.05])[:k]
    judge = (truth ^ flip).astype(float)
    audited = rng.choice(big_n, n, replace=False)
    return truth[audited].astype(float), judge[audited], judge


@pytest.mark.parametrize("seed", range(5))
def test_ppi_matches_the_reference_column_by_column(seed):
    y, yhat, yhat_all = _data(seed)
    lam = ppi.power_tuning(y, yhat, yhat_all)
    ours, _ = ppi.ppi(y, yhat, yhat_all, alpha=0.05, lam=lam)
    for j in range(y.shape[1]):
        lo, hi = ppi_py.ppi_mean_ci(y[:, j], yhat[:, j], yhat_all[:, j], alpha=0.05)
        point = ppi_py.ppi_mean_pointestimate(y[:, j], yhat[:, j], yhat_all[:, j])
        assert ours.value[j] == pytest.approx(float(np.squeeze(point)), abs=1e-12)
        assert ours.low[j] == pytest.approx(float(np.squeeze(lo)), abs=1e-12)
        assert ours.high[j] == pytest.approx(float(np.squeeze(hi)), abs=1e-12)
        assert 0 <= lam[j] <= 1


@pytest.mark.parametrize("seed", range(3))
def test_weighted_ppi_and_classical_match_the_reference(seed):
    y, yhat, yhat_all = _data(seed)
    w = np.random.default_rng(seed + 100).choice([1.0, 4.0, 9.0], size=len(y))
    ours, _ = ppi.ppi(y, yhat, yhat_all, w=w, alpha=0.05, lam=ppi.power_tuning(y, yhat, yhat_all, w))
    people = ppi.classical(y, w=w, alpha=0.05)
    for j in range(y.shape[1]):
        lo, hi = ppi_py.ppi_mean_ci(y[:, j], yhat[:, j], yhat_all[:, j], alpha=0.05, w=w)
        assert (ours.low[j], ours.high[j]) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=1e-12)
        clo, chi = ppi_py.classical_mean_ci(y[:, j], w=w, alpha=0.05)
        assert (people.low[j], people.high[j]) == pytest.approx((clo, chi), abs=1e-12)


def test_fixed_lambda_matches_the_reference():
    y, yhat, yhat_all = _data(9)
    ours, _ = ppi.ppi(y, yhat, yhat_all, alpha=0.05, lam=1.0)
    lo, hi = ppi_py.ppi_mean_ci(y[:, 1], yhat[:, 1], yhat_all[:, 1], alpha=0.05, lam=1.0)
    assert (ours.low[1], ours.high[1]) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=1e-12)


def test_lambda_is_tuned_only_with_enough_audited_positives():
    y, yhat, yhat_all = _data(3, n=120)
    _, lam = ppi.ppi(y, yhat, yhat_all)
    positives = np.minimum(y.sum(axis=0), yhat.sum(axis=0))
    tuned = ppi.power_tuning(y, yhat, yhat_all)
    assert positives[0] < ppi.MIN_POSITIVES <= positives[1]
    assert lam[0] == 1.0 and lam[1] == pytest.approx(tuned[1])


def test_no_variation_leaves_the_interval_undefined():
    y = np.zeros(50)
    est = ppi.classical(y)
    assert est.value[0] == 0 and np.isnan(est.low[0]) and np.isnan(est.high[0])


def test_simulation_covers_the_truth_and_beats_people_alone():
    """200 seeded repetitions of a synthetic truth and a judge of known error rates (the
    benchmark's design): PPI covers the truth, is narrower than people alone, the judge is biased."""
    from benchmarks.bench_ppi import MODES, simulate

    fig = simulate()
    assert fig.coverage["ppi"].mean() >= 0.93
    assert fig.width["ppi"].mean() < fig.width["people"].mean()
    assert fig.bias["judge"][MODES.index("FM-1.3")] > 0.08
    assert fig.coverage["judge"].mean() < 0.5
