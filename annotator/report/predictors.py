"""Which failure modes go with task failure: gaps, 2×2 statistics and a multivariable logit.

The descriptive ranking follows the ITBench × MAST study (MAST.md §8.2): per mode, the share
of failed trajectories showing it minus the share of successful ones, in percentage points;
the mode with the largest gap is "the strongest predictor". Next to it the usual statistics
(STATISTICS.md §4): risk ratio and odds ratio from ``Table2x2`` (rows = mode present/absent,
column 0 = failed), Fisher's exact p, Benjamini–Hochberg q over the modes, and a logistic
regression of failure on all modes (plus system/model where there are several), with
standard errors clustered by task where the same task was run more than once. A mode seen
only with one outcome separates the data: maximum likelihood then "converges" to huge
coefficients without raising, so separation is checked first and the fit falls back to an
L2-penalised one, saying so.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import statsmodels.api as sm
from scipy.stats import fisher_exact
from statsmodels.stats.contingency_tables import StratifiedTable, Table2x2
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from annotator.report import bootstrap
from annotator.report.frame import FAILED, SUCCEEDED, UNKNOWN, Frame
from annotator.report.row_groups import row_groups
from annotator.report.tables import num

#: Prior scale of the penalised fallback: an L2 penalty equal to a normal prior with this sd
#: on each log odds ratio (weakly informative; Gelman et al. 2008 use 2.5 for logits).
PRIOR_SD = 2.5
#: A maximum-likelihood coefficient beyond this (log odds) is treated as a sign of separation.
MAX_ABS_COEF = 10.0

LEAKAGE_CAVEAT = (
    "Definitional leakage: FM-3.x modes (premature termination, missing or wrong verification) and"
    " FM-1.5 are close to the definition of a failed run, so their association with failure is"
    " partly by construction; the regression is shown with and without FC3."
)


def _counts(present: np.ndarray, known: np.ndarray, failed: np.ndarray) -> dict[str, np.ndarray]:
    """Per mode: failed and succeeded trajectories that decided it, and those with it present
    (the column sums of :func:`gap_columns`)."""
    k = present.shape[1]
    sums = gap_columns(present, known, failed).sum(axis=0)
    return {"cf": sums[:k], "nf": sums[k:2 * k], "cs": sums[2 * k:3 * k], "ns": sums[3 * k:]}


def gap_records(frame: Frame, present: np.ndarray, known: np.ndarray,
                replicated: np.ndarray | None = None) -> list[dict]:
    """Per mode: prevalence among failed and successful trajectories and the gap, ranked by gap.

    The gap's 95% interval is Newcombe's (hybrid score); given the bootstrap sums of
    :func:`gap_columns`, a cluster bootstrap interval over trajectories is added.
    """
    c = _counts(present, known, frame.failed)
    pf, ps = bootstrap.ratio(c["cf"], c["nf"]), bootstrap.ratio(c["cs"], c["ns"])
    gap = pf - ps
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo, hi = confint_proportions_2indep(c["cf"], c["nf"], c["cs"], c["ns"], method="newcomb", compare="diff")
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    undefined = (c["nf"] == 0) | (c["ns"] == 0)
    lo[undefined] = hi[undefined] = np.nan
    blo = bhi = bundef = None
    if replicated is not None:
        k = present.shape[1]
        reps = bootstrap.ratio(replicated[:, :k], replicated[:, k:2 * k]) - bootstrap.ratio(
            replicated[:, 2 * k:3 * k], replicated[:, 3 * k:])
        blo, bhi, bundef = bootstrap.interval(reps)
        blo, bhi = bootstrap.withhold_degenerate(blo, bhi, np.minimum(c["nf"], c["ns"]))
    order = sorted(range(len(gap)), key=lambda i: (np.isnan(gap[i]), -np.nan_to_num(gap[i]), frame.mode_ids[i]))
    out = []
    for rank, i in enumerate(order, start=1):
        rec = {
            "rank": rank if not np.isnan(gap[i]) else None,
            "mode": frame.mode_ids[i],
            "failed_n": int(c["nf"][i]), "failed_with": int(c["cf"][i]), "prevalence_failed": num(pf[i]),
            "succeeded_n": int(c["ns"][i]), "succeeded_with": int(c["cs"][i]), "prevalence_succeeded": num(ps[i]),
            "gap_pp": num(gap[i] * 100), "gap_ci_low_pp": num(lo[i] * 100), "gap_ci_high_pp": num(hi[i] * 100),
        }
        if replicated is not None:
            rec.update({"gap_boot_low_pp": num(blo[i] * 100), "gap_boot_high_pp": num(bhi[i] * 100),
                        "boot_undefined": int(bundef[i])})
        out.append(rec)
    return out


def gap_columns(present: np.ndarray, known: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """Per-trajectory terms of the gap, for the bootstrap: present & failed, failed, and the same
    for succeeded, per mode."""
    f = (failed == FAILED)[:, None] & known
    s = (failed == SUCCEEDED)[:, None] & known
    return np.hstack([present & f, f, present & s, s])


def table_records(frame: Frame, present: np.ndarray, known: np.ndarray) -> list[dict]:
    """Per mode: the 2×2 table, risk ratio and odds ratio with 95% intervals, Fisher p, BH q, and
    the Mantel–Haenszel odds ratio over systems."""
    systems = frame.codes("system")
    out = []
    for j, mode in enumerate(frame.mode_ids):
        rows = known[:, j] & (frame.failed != UNKNOWN)
        p, f = present[rows, j], frame.failed[rows] == FAILED
        a, b = int((p & f).sum()), int((p & ~f).sum())
        c, d = int((~p & f).sum()), int((~p & ~f).sum())
        rec = {"mode": mode, "present_failed": a, "present_succeeded": b, "absent_failed": c,
               "absent_succeeded": d, "risk_ratio": None, "rr_ci_low": None, "rr_ci_high": None,
               "odds_ratio": None, "or_ci_low": None, "or_ci_high": None, "fisher_p": None,
               "zero_cell": min(a, b, c, d) == 0}
        if (a + b) and (c + d) and (a + c) and (b + d):
            t = Table2x2(np.array([[a, b], [c, d]], dtype=float))
            with np.errstate(all="ignore"):
                rr_lo, rr_hi = t.riskratio_confint()
                or_lo, or_hi = t.oddsratio_confint()
                rec.update({"risk_ratio": num(t.riskratio), "rr_ci_low": num(rr_lo), "rr_ci_high": num(rr_hi),
                            "odds_ratio": num(t.oddsratio), "or_ci_low": num(or_lo), "or_ci_high": num(or_hi)})
            rec["fisher_p"] = num(fisher_exact([[a, b], [c, d]]).pvalue, None)
        rec.update(mantel_haenszel(p, f, systems[rows]))
        out.append(rec)
    pvals = [r["fisher_p"] for r in out]
    defined = [i for i, p in enumerate(pvals) if p is not None]
    qs = multipletests([pvals[i] for i in defined], method="fdr_bh")[1] if defined else []
    for r in out:
        r["bh_q"] = None
    for i, q in zip(defined, qs, strict=True):
        out[i]["bh_q"] = num(q, None)
    return out


def mantel_haenszel(present: np.ndarray, failed: np.ndarray, strata: np.ndarray) -> dict:
    """The odds ratio pooled over systems (Mantel–Haenszel, statsmodels ``StratifiedTable``).

    ``strata`` numbers each row's system (0, 1, ...).

    A mode that goes with failure within every system, and not only because some systems
    both fail more and show it more, keeps its odds ratio here (Simpson's paradox). Only
    systems with both outcomes and both values of the mode inform it; with fewer than two of
    them there is nothing to pool.
    """
    code = np.asarray(strata, dtype=np.int64)
    cells = np.bincount(code * 4 + (1 - present.astype(int)) * 2 + (1 - failed.astype(int)),
                        minlength=4 * (code.max() + 1 if len(code) else 0))
    tables = [t for t in cells.reshape(-1, 2, 2).astype(float)
              if (t.sum(axis=0) > 0).all() and (t.sum(axis=1) > 0).all()]
    out = {"mh_strata": len(tables), "mh_odds_ratio": None, "mh_ci_low": None, "mh_ci_high": None}
    if len(tables) < 2:
        return out
    st = StratifiedTable(np.dstack(tables))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo, hi = st.oddsratio_pooled_confint()
        out.update({"mh_odds_ratio": num(st.oddsratio_pooled), "mh_ci_low": num(lo), "mh_ci_high": num(hi)})
    return out


@dataclass
class LogitResult:
    """A fitted logistic regression of failure on the modes (and groups), as odds ratios."""

    method: str
    records: list[dict]
    n: int
    notes: list[str] = field(default_factory=list)


def logistic(frame: Frame, present: np.ndarray, known: np.ndarray, *,
             exclude_categories: tuple[str, ...] = ()) -> LogitResult:
    """Logit of failure on every mode (plus system/model dummies where several levels exist)."""
    notes: list[str] = []
    cat = np.asarray(frame.category_of())
    cols = [j for j in range(len(frame.mode_ids)) if cat[j] not in exclude_categories]
    rows = (frame.failed != UNKNOWN) & known[:, cols].all(axis=1)
    if (~rows).sum():
        notes.append(f"{int((~rows).sum())} trajectories left out (unknown outcome or an undecided mode)")
    y = (frame.failed[rows] == FAILED).astype(float)
    if len(y) == 0 or y.all() or not y.any():
        notes.append("not fitted: needs failed and successful trajectories")
        return LogitResult("not fitted", [], int(len(y)), notes)
    names, columns = [], []
    for j in cols:
        x = present[rows, j]
        if x.all() or not x.any():
            notes.append(f"{frame.mode_ids[j]} left out: {'always' if x.all() else 'never'} present")
            continue
        names.append(frame.mode_ids[j])
        columns.append(x)
    for column in ("system", "model"):
        codes = frame.codes(column)[rows]
        levels = [lv for lv, used in zip(frame.levels(column), np.bincount(codes, minlength=len(frame.levels(column))),
                                         strict=True) if used]
        for level in levels[1:]:
            names.append(f"{column}={level}")
            columns.append(codes == frame.levels(column).index(level))
        if len(levels) > 1:
            notes.append(f"{column} reference level: {levels[0]}")
    if not columns:
        return LogitResult("not fitted", [], int(len(y)), notes + ["not fitted: no mode varies"])
    events = int(min(y.sum(), len(y) - y.sum()))
    if events < 10 * len(names):
        notes.append(f"{events} events (the rarer outcome) for {len(names)} predictors: fewer than 10 per"
                     " predictor, so the estimates are unstable")
    clusters = task_clusters(frame.tasks[rows])
    rows_of = _distinct(y, columns, clusters)
    first = np.arange(len(y)) if rows_of is None else rows_of[0]
    design = np.empty((len(first), len(columns) + 1))  # sm.add_constant's layout: the constant first
    design[:, 0] = 1.0
    for i, x in enumerate(columns):
        design[:, i + 1] = x[first]
    times = None if rows_of is None else np.bincount(rows_of[1], minlength=len(first))
    separating = _separating(design[:, 1:], y[first], names)
    if separating:
        reason = ("separation: " + ", ".join(separating) + " occur(s) with only one outcome, so the maximum-"
                  "likelihood odds ratio is infinite")
    elif np.linalg.matrix_rank(design.T @ (design if times is None else design * times[:, None])) < design.shape[1]:
        reason = "collinearity: some predictor is a combination of others, so maximum likelihood has no unique fit"
    else:
        if clusters is not None:
            notes.append(f"standard errors clustered by task ({len(np.unique(clusters))} tasks), since some"
                         " tasks were run more than once")
        result = _ml(design, y[first], names, clusters, times)
        if result is not None:
            return LogitResult("maximum likelihood", result, int(len(y)), notes)
        reason = "maximum likelihood did not converge or gave a coefficient beyond ±10 log-odds"
    notes.append(f"{reason}; fitted instead with an L2 penalty (normal prior, sd {PRIOR_SD} on each log odds"
                 " ratio): point estimates only, no intervals")
    if rows_of is not None:  # the penalty is scaled by the number of rows: fitted on every row
        design = design[rows_of[1]]
    return LogitResult("L2-penalised", _penalised(design, y, names), int(len(y)), notes)


def _distinct(y: np.ndarray, columns: list[np.ndarray], clusters: np.ndarray | None) -> tuple | None:
    """The distinct rows of (outcome, predictors) as (first row of each, each row's group), when the
    likelihood is a sum over rows (no clusters) and that saves rows; None to fit every row.

    Trajectories with the same outcome and predictors add the same term to the log-likelihood, its
    gradient and its Hessian, so a fit over the distinct rows weighted by how often each occurs
    has the same estimates and the same (model-based) standard errors; over a million
    trajectories there are some tens of thousands, and each Newton step is that much shorter.
    Cluster-robust errors need every row's score, so rows are not merged then.
    """
    if clusters is not None:
        return None
    first, group = row_groups([y, *columns], len(y))
    return (first, group) if len(first) < len(y) else None


def _separating(x: np.ndarray, y: np.ndarray, names: list[str]) -> list[str]:
    """Predictors whose 2×2 table with the outcome has an empty cell."""
    yb = y.astype(bool)
    out = []
    for j, name in enumerate(names):
        xb = x[:, j].astype(bool)
        if min((xb & yb).sum(), (xb & ~yb).sum(), (~xb & yb).sum(), (~xb & ~yb).sum()) == 0:
            out.append(name)
    return out


def task_clusters(tasks: np.ndarray) -> np.ndarray | None:
    """Cluster labels for runs of the same task (a run of an unknown task is its own cluster);
    None when no task repeats, so the ordinary standard errors stand."""
    known = tasks[tasks >= 0]
    if len(np.unique(known)) == len(known):
        return None
    return np.where(tasks >= 0, tasks, -1 - np.arange(len(tasks)))


def _ml(design: np.ndarray, y: np.ndarray, names: list[str], clusters: np.ndarray | None = None,
        times: np.ndarray | None = None) -> list[dict] | None:
    """Maximum likelihood (statsmodels Logit), with cluster-robust covariance when ``clusters`` is given.

    With ``times`` (how often each row occurs), the rows are distinct ones and the fit is
    statsmodels' binomial GLM with those frequency weights, by Newton's method as Logit's: the
    same estimates and errors as Logit over the repeated rows (to 1e-14 over 100,000
    trajectories).
    """
    robust = {} if clusters is None else {"cov_type": "cluster", "cov_kwds": {"groups": clusters}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if times is None:
                res = sm.Logit(y, design, check_rank=False).fit(disp=0, maxiter=200, **robust)
            else:
                res = sm.GLM(y, design, family=sm.families.Binomial(), freq_weights=times).fit(
                    method="newton", disp=0, maxiter=200)
        except np.linalg.LinAlgError:
            return None
    params, ci = np.asarray(res.params), np.asarray(res.conf_int())
    if not res.mle_retvals.get("converged", False) or np.abs(params[1:]).max() > MAX_ABS_COEF:
        return None
    pvalues = np.asarray(res.pvalues)
    return [
        {"term": name, "coef": num(params[i + 1]), "odds_ratio": num(np.exp(params[i + 1])),
         "ci_low": num(np.exp(ci[i + 1, 0])), "ci_high": num(np.exp(ci[i + 1, 1])), "p": num(pvalues[i + 1], None)}
        for i, name in enumerate(names)
    ]


def _penalised(design: np.ndarray, y: np.ndarray, names: list[str]) -> list[dict]:
    alpha = np.full(design.shape[1], 1.0 / (len(y) * PRIOR_SD**2))
    alpha[0] = 0.0  # the intercept is not shrunk
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.GLM(y, design, family=sm.families.Binomial()).fit_regularized(alpha=alpha, L1_wt=0.0)
    params = np.asarray(res.params)
    return [
        {"term": name, "coef": num(params[i + 1]), "odds_ratio": num(np.exp(params[i + 1])),
         "ci_low": None, "ci_high": None, "p": None}
        for i, name in enumerate(names)
    ]
