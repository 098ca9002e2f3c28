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
    ours, lam = ppi.ppi(y, yhat, yhat_all, alpha=0.05)  # λ always tuned, as ppi-python with lam=None
    for j in range(y.shape[1]):
        lo, hi = ppi_py.ppi_mean_ci(y[:, j], yhat[:, j], yhat_all[:, j], alpha=0.05)
        point = ppi_py.ppi_mean_pointestimate(y[:, j], yhat[:, j], yhat_all[:, j])
        assert ours.value[j] == pytest.approx(float(np.squeeze(point)), abs=1e-12)
        assert ours.low[j] == pytest.approx(float(np.squeeze(lo)), abs=1e-12)
        assert ours.high[j] == pytest.approx(float(np.squeeze(hi)), abs=1e-12)
        assert 0 <= lam[j] <= 1


@pytest.mark.parametrize("seed", range(3))
def test_classical_matches_the_reference(seed):
    y, _, _ = _data(seed)
    people = ppi.classical(y, alpha=0.05)
    for j in range(y.shape[1]):
        lo, hi = ppi_py.classical_mean_ci(y[:, j], alpha=0.05)
        assert (people.low[j], people.high[j]) == pytest.approx((lo, hi), abs=1e-12)


def test_fixed_lambda_matches_the_reference():
    y, yhat, yhat_all = _data(9)
    ours, _ = ppi.ppi(y, yhat, yhat_all, alpha=0.05, lam=1.0)
    lo, hi = ppi_py.ppi_mean_ci(y[:, 1], yhat[:, 1], yhat_all[:, 1], alpha=0.05, lam=1.0)
    assert (ours.low[1], ours.high[1]) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=1e-12)


def test_tuned_ppi_is_never_wider_than_people_alone_on_the_same_audit():
    """λ = 0 is the people-only estimate, and tuning picks the λ of least estimated variance."""
    for seed in range(20):
        y, yhat, yhat_all = _data(seed, n=60)
        tuned, _ = ppi.ppi(y, yhat, yhat_all)
        people = ppi.classical(y)
        assert (tuned.se <= people.se * (1 + 1e-9)).all()


def test_stratified_ppi_combines_the_strata_reference_estimates_by_population_share():
    """Σ_h W_h θ_h and se² = Σ_h W_h² se_h², each stratum's θ_h and se_h by ppi-python."""
    rng = np.random.default_rng(5)
    y, yhat, yhat_all = _data(4, n=200, big_n=3000, k=1)
    stratum_all = rng.integers(0, 2, size=len(yhat_all))
    stratum = rng.integers(0, 2, size=len(y))
    ours = ppi.stratified(y, yhat, yhat_all, stratum, stratum_all)
    value = var = 0.0
    for h in (0, 1):
        share = (stratum_all == h).mean()
        args = (y[stratum == h, 0], yhat[stratum == h, 0], yhat_all[stratum_all == h, 0])
        point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(*args)))
        lo, hi = ppi_py.ppi_mean_ci(*args, alpha=0.05)
        se = (float(np.squeeze(hi)) - float(np.squeeze(lo))) / 2 / 1.959963984540054
        value, var = value + share * point, var + share**2 * se**2
    assert ours.value[0] == pytest.approx(value, abs=1e-12)
    assert ours.se[0] == pytest.approx(np.sqrt(var), abs=1e-9)
    assert np.isnan(ppi.stratified(y[:1], yhat[:1], yhat_all, stratum[:1], stratum_all).value).all()


def test_no_variation_leaves_the_interval_undefined():
    y = np.zeros(50)
    est = ppi.classical(y)
    assert est.value[0] == 0 and np.isnan(est.low[0]) and np.isnan(est.high[0])


@pytest.mark.parametrize("stratified", [False, True], ids=["simple-random", "stratified"])
def test_simulation_covers_the_truth_on_every_mode_and_is_never_wider_than_people_alone(stratified):
    """200 seeded repetitions of a synthetic truth and a judge of known error rates (the
    benchmark's design), audited at random or stratified on the judge's verdict on the rarest
    mode: the corrected interval covers the truth on every mode, is never wider on average than
    people alone on any mode; the judge alone is biased. The normal intervals it replaces do not
    cover the rare modes."""
    from benchmarks.bench_ppi import COVERAGE, MODES, simulate

    fig = simulate(stratified=stratified)
    assert fig.coverage["ppi"].min() >= COVERAGE
    assert (fig.ratio() <= 1).all() and fig.ratio().mean() < 0.9
    assert fig.bias["judge"][MODES.index("FM-1.3")] > 0.08
    assert fig.coverage["judge"].mean() < 0.5
    assert fig.coverage["ppi_plus_plus"].min() < COVERAGE and fig.coverage["people_wald"].min() < COVERAGE


def test_simulated_corrected_gap_covers_every_mode_and_is_never_wider_than_people_alone():
    """The failed-minus-successful gap of the benchmark's gap design (modes more common in failed
    runs), 200 audits of 200: the corrected interval covers the true gap on every mode."""
    from benchmarks.bench_ppi import COVERAGE, simulate_gap

    fig = simulate_gap()
    assert fig.coverage["ppi"].min() >= COVERAGE
    assert (fig.ratio() <= 1).all()
