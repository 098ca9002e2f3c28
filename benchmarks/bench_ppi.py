"""Validity of the judge-corrected prevalence, by simulation.

A synthetic truth (5,000 trajectories, 14 modes with prevalences like MAST's) and a judge of
known per-mode error rates (it over-calls FM-1.3 by 15 points, misses half of FM-2.6, ...). In
each of 200 seeded repetitions people "audit" 200 trajectories (their labels are the truth) and
the 95% intervals of each mode's prevalence are computed: the judge alone (Wilson over all
5,000), the audited people alone, and the judge corrected by the audit
(``annotator.report.stratified``: stratified PPI with the judge's verdict as the stratum), as
the report computes them; beside them, for comparison, the normal-approximation (Wald) interval
of people alone, and PPI++ with its normal interval (``annotator.report.ppi``). Two designs: a
simple random audit, and a stratified one that takes half of the audit from the judge's positives
of FM-2.4 (the rarest mode, which the judge misses half of), estimated stratum by stratum; and,
as for one group of a report, a simple random audit of 60 of 1,700. Then the failed-minus-
successful gap per mode (``simulate_gap``: modes more common in failed runs), held to the same
checks.

Printed per mode and design: coverage of the true prevalence, mean interval width of the
corrected estimate over people alone, and bias. The run fails when, in either design, the
corrected interval covers the truth in less than 93% of the repetitions on any mode, is wider
on average than people alone on any mode, or the naive estimate is not visibly biased.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from annotator.report import ppi
from annotator.report.prevalence import wilson
from annotator.report.stratified import Share, mover, share

from benchmarks.targets import Targets

N, N_AUDIT, REPS = 5000, 200, 200
MODES = ("FM-1.1", "FM-1.2", "FM-1.3", "FM-1.4", "FM-1.5", "FM-2.1", "FM-2.2", "FM-2.3", "FM-2.4", "FM-2.5",
         "FM-2.6", "FM-3.1", "FM-3.2", "FM-3.3")
#: True prevalence per mode, and the judge's sensitivity and false-positive rate.
PREVALENCE = np.array([0.12, 0.03, 0.18, 0.03, 0.10, 0.04, 0.10, 0.07, 0.02, 0.03, 0.12, 0.10, 0.16, 0.10])
SENSITIVITY = np.array([0.85, 0.70, 0.90, 0.60, 0.80, 0.75, 0.70, 0.80, 0.50, 0.65, 0.50, 0.90, 0.85, 0.70])
FALSE_POSITIVE = np.array([0.05, 0.02, 0.15, 0.01, 0.04, 0.02, 0.06, 0.03, 0.01, 0.02, 0.02, 0.08, 0.10, 0.05])
#: The estimators: judge alone, people alone, corrected (as reported); and two normal-interval peers.
ESTIMATORS = ("judge", "people", "ppi", "people_wald", "ppi_plus_plus")
#: Least coverage per mode, and the mode the stratified design oversamples.
COVERAGE, RARE = 0.93, "FM-2.4"


@dataclass
class Figures:
    """Per estimator: coverage, mean width and mean bias per mode."""

    coverage: dict[str, np.ndarray]
    width: dict[str, np.ndarray]
    bias: dict[str, np.ndarray]

    def ratio(self, estimator: str = "ppi", to: str = "people") -> np.ndarray:
        """Mean width of ``estimator`` over mean width of ``to``, per mode."""
        return self.width[estimator] / self.width[to]


def judge_labels(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(truth.shape)
    return np.where(truth, u < SENSITIVITY, u < FALSE_POSITIVE)


def _audit(judge: np.ndarray, rng: np.random.Generator, stratified: bool, n_audit: int) -> tuple[np.ndarray, np.ndarray]:
    """The audited rows and every row's stratum: simple random, or half from the judge's RARE positives."""
    if not stratified:
        return rng.choice(len(judge), n_audit, replace=False), np.zeros(len(judge), dtype=int)
    strata = judge[:, MODES.index(RARE)].astype(int)
    picks = []
    for h in (1, 0):
        members = np.flatnonzero(strata == h)
        picks.append(rng.choice(members, min(len(members), n_audit // 2), replace=False))
    return np.concatenate(picks), strata


def simulate(reps: int = REPS, seed: int = 7, stratified: bool = False, n: int = N, n_audit: int = N_AUDIT) -> Figures:
    """``reps`` repetitions of truth, judge and audit of ``n_audit`` of ``n`` (simple random, or
    stratified on RARE's verdict)."""
    k = len(MODES)
    hits = {e: np.zeros(k) for e in ESTIMATORS}
    width = {e: np.zeros(k) for e in ESTIMATORS}
    bias = {e: np.zeros(k) for e in ESTIMATORS}
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        truth = rng.random((n, k)) < PREVALENCE
        judge = judge_labels(truth, rng)
        target = truth.mean(axis=0)
        audited, strata = _audit(judge, rng, stratified, n_audit)
        y, yhat, yall = truth[audited].astype(float), judge[audited].astype(float), judge.astype(float)
        lo, hi = wilson(judge.sum(axis=0), np.full(k, n))
        people = [share(y[:, j], strata[audited], strata) for j in range(k)]
        corrected = [share(y[:, j], strata[audited], strata, yhat[:, j], yall[:, j]) for j in range(k)]
        est = {
            "judge": (judge.mean(axis=0), lo, hi),
            "people": tuple(np.array([getattr(s, f) for s in people]) for f in ("value", "low", "high")),
            "ppi": tuple(np.array([getattr(s, f) for s in corrected]) for f in ("value", "low", "high")),
        }
        for name, lam in (("people_wald", 0.0), ("ppi_plus_plus", None)):
            e = ppi.stratified(y, yhat, yall, strata[audited], strata, lam=lam)
            est[name] = (e.value, e.low, e.high)
        for e, (value, low, high) in est.items():
            hits[e] += (low <= target) & (target <= high)
            width[e] += np.nan_to_num(high - low)
            bias[e] += value - target
    return Figures({e: h / reps for e, h in hits.items()}, {e: v / reps for e, v in width.items()},
                   {e: v / reps for e, v in bias.items()})


#: The failed share of the gap design, and how much more (less) often a mode shows in a failed (successful) run.
FAILED_SHARE, IN_FAILED, IN_SUCCEEDED = 0.6, 1.4, 0.4


def simulate_gap(reps: int = REPS, seed: int = 11) -> Figures:
    """``reps`` repetitions of the failed-minus-successful gap per mode (modes more common in failed
    runs), a simple random audit of N_AUDIT of N: people alone and corrected, each side estimated on
    its own trajectories and the two combined by MOVER, as the report does."""
    k = len(MODES)
    hits = {e: np.zeros(k) for e in ("people", "ppi")}
    width = {e: np.zeros(k) for e in hits}
    bias = {e: np.zeros(k) for e in hits}
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        failed = rng.random(N) < FAILED_SHARE
        truth = rng.random((N, k)) < PREVALENCE * np.where(failed[:, None], IN_FAILED, IN_SUCCEEDED)
        judge = judge_labels(truth, rng).astype(float)
        target = truth[failed].mean(axis=0) - truth[~failed].mean(axis=0)
        audited = rng.choice(N, N_AUDIT, replace=False)
        one = np.zeros(N, dtype=int)
        for j in range(k):
            sides: dict[str, list[Share]] = {"people": [], "ppi": []}
            for group in (failed, ~failed):
                rows = audited[group[audited]]
                y = truth[rows, j].astype(float)
                sides["people"].append(share(y, one[rows], one[group]))
                sides["ppi"].append(share(y, one[rows], one[group], judge[rows, j], judge[group, j]))
            for e, (first, second) in sides.items():
                gap = mover([(1.0, first), (-1.0, second)])
                hits[e][j] += gap.low <= target[j] <= gap.high
                width[e][j] += gap.width
                bias[e][j] += gap.value - target[j]
    return Figures({e: h / reps for e, h in hits.items()}, {e: v / reps for e, v in width.items()},
                   {e: v / reps for e, v in bias.items()})


def report_gap(fig: Figures, targets: Targets) -> None:
    """Print the gap figures, held to the acceptance checks."""
    cover, ratio = fig.coverage["ppi"], fig.ratio()
    print(f"\nfailed-minus-successful gap, simple random audit: {REPS} repetitions, N = {N}, n = {N_AUDIT}")
    for j, mode in enumerate(MODES):
        print(f"{mode:8} coverage people/ppi {fig.coverage['people'][j]:.3f}/{cover[j]:.3f}  width ppi/people"
              f" {ratio[j]:.3f}  bias ppi {100 * fig.bias['ppi'][j]:+.2f} pp")
    low, widest = int(np.argmin(cover)), int(np.argmax(ratio))
    print(f"corrected gap: coverage mean {cover.mean():.3f}, lowest {cover[low]:.3f} ({MODES[low]}); width / people"
          f" alone mean {ratio.mean():.3f}, highest {ratio[widest]:.3f} ({MODES[widest]})")
    _checks(fig, "gap", targets)


def _checks(fig: Figures, title: str, targets: Targets) -> None:
    """The corrected interval's checks: coverage at least COVERAGE and no wider than people alone,
    on every mode (printed for the worst mode)."""
    cover, ratio = fig.coverage["ppi"], fig.ratio()
    low, widest = int(np.argmin(cover)), int(np.argmax(ratio))
    print(f"{title}: the corrected interval's lowest coverage {cover[low]:.3f} ({MODES[low]})   "
          + targets.at_least(f"{title}: coverage of {MODES[low]}", cover[low], COVERAGE)
          + f"; its widest over people alone {ratio[widest]:.3f} ({MODES[widest]})   "
          + targets.at_most(f"{title}: width on {MODES[widest]}", ratio[widest], 1))


def report(fig: Figures, title: str, targets: Targets, n: int = N, n_audit: int = N_AUDIT) -> None:
    """Print the figures, held to the acceptance checks."""
    print(f"\n{title}: {REPS} repetitions, N = {n}, n = {n_audit} audited")
    print(f"{'mode':8} {'truth':>5} | {'coverage judge/people/ppi':>25} | {'wald people/ppi++':>17} |"
          f" {'width ppi/people':>16} | {'bias judge/ppi (pp)':>19}")
    ratio = fig.ratio()
    for j, mode in enumerate(MODES):
        c = "/".join(f"{fig.coverage[e][j]:.3f}" for e in ("judge", "people", "ppi"))
        wald = "/".join(f"{fig.coverage[e][j]:.3f}" for e in ("people_wald", "ppi_plus_plus"))
        b = f"{100 * fig.bias['judge'][j]:+.1f}/{100 * fig.bias['ppi'][j]:+.2f}"
        print(f"{mode:8} {PREVALENCE[j]:5.2f} | {c:>25} | {wald:>17} | {ratio[j]:16.3f} | {b:>19}")
    cover = fig.coverage["ppi"]
    low, widest = int(np.argmin(cover)), int(np.argmax(ratio))
    worst = int(np.argmax(np.abs(fig.bias["judge"])))
    print(f"corrected: coverage mean {cover.mean():.3f}, lowest {cover[low]:.3f} ({MODES[low]});"
          f" width / people alone mean {ratio.mean():.3f}, highest {ratio[widest]:.3f} ({MODES[widest]});"
          f" width / people's Wald interval mean {fig.ratio('ppi', 'people_wald').mean():.3f}")
    for e in ("people", "people_wald", "ppi_plus_plus", "judge"):
        c = fig.coverage[e]
        print(f"{e}: coverage mean {c.mean():.3f}, lowest {c.min():.3f} ({MODES[int(np.argmin(c))]})", end="; ")
    print(f"largest judge bias {100 * fig.bias['judge'][worst]:+.1f} pp ({MODES[worst]}),"
          f" largest corrected bias {100 * np.abs(fig.bias['ppi']).max():.2f} pp;"
          f" width ratio range {ratio.min():.3f}-{ratio.max():.3f}")
    _checks(fig, title, targets)
    print(f"{title}: the naive estimate visibly biased: judge's coverage mean {fig.coverage['judge'].mean():.3f}   "
          + targets.at_most(f"{title}: judge's coverage", fig.coverage["judge"].mean(), 0.5)
          + f", its largest bias {100 * abs(fig.bias['judge'][worst]):.1f} pp   "
          + targets.at_least(f"{title}: judge's bias", 100 * abs(fig.bias["judge"][worst]), 5, " pp"))


def main() -> int:
    targets = Targets()
    report(simulate(), "simple random audit", targets)
    report(simulate(stratified=True), f"stratified audit (half from the judge's {RARE} positives)", targets)
    # A report's groups are smaller: one system's share of the run and of its audit.
    report(simulate(n=1700, n_audit=60), "simple random audit of one group", targets, 1700, 60)
    report_gap(simulate_gap(), targets)
    return targets.exit_code


if __name__ == "__main__":
    sys.exit(main())
