"""Judge-corrected estimates: a report's section when people audited a sample of a judge's run.

Three estimates side by side for each quantity, each with its 95% interval: the judge alone
over its N trajectories (naive: treats the judge as truth), the audited people alone over their
n, and prediction-powered inference (:mod:`annotator.report.ppi`: the judge on all N corrected
by the people-minus-judge difference on the n). Quantities: each mode's prevalence, overall
and per group; the failed-minus-successful prevalence gap (PPI on the failed and on the
successful trajectories, which are disjoint, so the variances add); the mean number of modes
per failed trajectory. ``n_effective`` is how many audited trajectories the people-only
estimate would need for PPI's precision.

The audited trajectories are those of the sample (``mast sample``) that the people finished;
a stratified sample is weighted by 1/π per stratum, π = audited / stratum size, so a stratum
the people left partly undone is weighted by what they did. Without a stored sample every
trajectory both sources finished counts, as if drawn at random, and the section says so.
"""

from __future__ import annotations

import numpy as np
from sqlite_utils import Database
from statsmodels.stats.proportion import confint_proportions_2indep

from annotator.errors import ReportError
from annotator.report import ppi
from annotator.report.frame import FAILED, SUCCEEDED, Frame, build
from annotator.report.prevalence import wilson
from annotator.report.tables import Finding, Section, Table, num
from annotator.store.samples import Sample, get_sample, latest_sample, sample_items
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

ESTIMATE_COLUMNS = ["n_audit", "n_total", "judge", "judge_ci_low", "judge_ci_high", "human", "human_ci_low",
                    "human_ci_high", "ppi", "ppi_ci_low", "ppi_ci_high", "n_effective", "lambda"]


class Audit:
    """The judge's frame, the audited rows in it, their people's labels and weights."""

    def __init__(self, frame: Frame, source: str, people: Frame, audit: str, sample: Sample | None,
                 items: dict[str, str]) -> None:
        self.frame, self.sample = frame, sample
        #: The modes both the judge and the people cover (a partial source is audited on its modes).
        self.modes = tuple(m for m in frame.mode_ids if m in people.mode_ids)
        jcols = [frame.mode_ids.index(m) for m in self.modes]
        pcols = [people.mode_ids.index(m) for m in self.modes]
        judge = frame.labels[source]
        self.judge_present, self.judge_known = judge.present[:, jcols], judge.known[:, jcols]
        self.yhat_all = self.judge_present.astype(float)  # an unknown verdict predicts absent: PPI stays unbiased
        self.judge_counts = self.yhat_all.sum(axis=1)
        where = {t: i for i, t in enumerate(people.ids.tolist())}
        in_sample = [i for i, t in enumerate(frame.ids.tolist()) if t in where and (sample is None or t in items)]
        self.rows = np.asarray(in_sample, dtype=np.int64)
        mine = np.asarray([where[t] for t in frame.ids[self.rows].tolist()], dtype=np.int64)
        person = people.labels[audit]
        self.y, self.y_known = person.present[mine][:, pcols].astype(float), person.known[mine][:, pcols]
        self.weights: np.ndarray | None = None
        judged = set(frame.ids.tolist())
        #: Trajectories the people finished (and the judge labelled) outside the sample: not used.
        self.audited_outside = 0 if sample is None else sum(
            1 for t in people.ids.tolist() if t not in items and t in judged)
        if sample is not None and sample.stratify:
            strata = np.asarray([items[t] for t in frame.ids[self.rows].tolist()], dtype=object)
            done = {h: int((strata == h).sum()) for h in sample.strata}
            self.weights = np.asarray([sample.strata[h][0] / done[h] for h in strata.tolist()], dtype=float)

    @property
    def n(self) -> int:
        return len(self.rows)


def _count(value: float) -> int | None:
    """An effective sample size as a whole number of trajectories (None where undefined)."""
    return int(round(value)) if np.isfinite(value) else None


def _clip(est: ppi.Estimates, low: float | None, high: float | None) -> ppi.Estimates:
    if low is None:
        return est
    return ppi.Estimates(np.clip(est.value, low, high), est.se, np.clip(est.low, low, high), np.clip(est.high, low, high))


def _record(n: int, big_n: int, judge: ppi.Estimates, people: ppi.Estimates, corrected: ppi.Estimates,
            lam: np.ndarray, bounds: tuple[float | None, float | None] = (None, None)) -> dict:
    n_effective = ppi.effective_n(n, people, corrected)[0]
    people, corrected = _clip(people, *bounds), _clip(corrected, *bounds)
    out = {"n_audit": n, "n_total": big_n}
    for name, e in (("judge", judge), ("human", people), ("ppi", corrected)):
        out[name] = num(e.value[0])
        out[f"{name}_ci_low"] = num(e.low[0])
        out[f"{name}_ci_high"] = num(e.high[0])
    out["n_effective"] = _count(n_effective)
    out["lambda"] = num(lam[0], 4)
    return out


def _subset(a: Audit, mask_all: np.ndarray, column: int):
    """The audited rows inside ``mask_all`` whose people's verdict on ``column`` is known: the
    people's values, the judge's predictions there and on every row of the mask, the weights."""
    inside = mask_all[a.rows] & a.y_known[:, column]
    rows = a.rows[inside]
    w = None if a.weights is None else a.weights[inside]
    return a.y[inside, column], a.yhat_all[rows, column], a.yhat_all[mask_all, column], w


def _prevalence(a: Audit, mask_all: np.ndarray, column: int) -> dict:
    y, yhat, yall, w = _subset(a, mask_all, column)
    known = a.judge_known[mask_all, column]
    count = (a.judge_present[mask_all, column] & known).sum()
    nobs = known.sum()
    lo, hi = wilson(np.asarray([count]), np.asarray([nobs]))
    share = np.asarray([count / nobs if nobs else np.nan])
    judge = ppi.Estimates(share, np.zeros(1), lo, hi)
    people = ppi.classical(y, w)
    corrected, lam = ppi.ppi(y, yhat, yall, w)
    return _record(len(y), int(mask_all.sum()), judge, people, corrected, lam, bounds=(0.0, 1.0))


def _gap(a: Audit, mask_all: np.ndarray, column: int) -> dict:
    failed, succeeded = mask_all & (a.frame.failed == FAILED), mask_all & (a.frame.failed == SUCCEEDED)
    parts = [_subset(a, m, column) for m in (failed, succeeded)]
    counts = [(a.judge_present[m, column] & a.judge_known[m, column]).sum() for m in (failed, succeeded)]
    nobs = [a.judge_known[m, column].sum() for m in (failed, succeeded)]
    if min(nobs) > 0:
        diff = counts[0] / nobs[0] - counts[1] / nobs[1]
        lo, hi = confint_proportions_2indep(counts[0], nobs[0], counts[1], nobs[1], method="newcomb", compare="diff")
    else:
        diff = lo = hi = np.nan
    judge = ppi.Estimates(np.asarray([diff]), np.zeros(1), np.asarray([lo]), np.asarray([hi]))
    people = ppi.difference(*(ppi.classical(y, w) for y, _, _, w in parts))
    fits = [ppi.ppi(y, yhat, yall, w) for y, yhat, yall, w in parts]
    corrected = ppi.difference(fits[0][0], fits[1][0])
    out = {"n_audit_failed": len(parts[0][0]), "n_audit_succeeded": len(parts[1][0]),
           "n_total": int((failed | succeeded).sum())}
    for name, e in (("judge", judge), ("human", people), ("ppi", corrected)):
        out[f"{name}_gap_pp"] = num(e.value[0] * 100)
        out[f"{name}_gap_ci_low_pp"] = num(e.low[0] * 100)
        out[f"{name}_gap_ci_high_pp"] = num(e.high[0] * 100)
    out["n_effective"] = _count(ppi.effective_n(len(parts[0][0]) + len(parts[1][0]), people, corrected)[0])
    return out


def _mean_modes(a: Audit, mask_all: np.ndarray) -> dict:
    failed = mask_all & (a.frame.failed == FAILED)
    complete = a.y_known.all(axis=1)
    inside = failed[a.rows] & complete
    rows = a.rows[inside]
    y = a.y[inside].sum(axis=1)
    w = None if a.weights is None else a.weights[inside]
    yall = a.judge_counts[failed]
    judge = ppi.classical(yall)
    people = ppi.classical(y, w)
    corrected, lam = ppi.ppi(y, a.judge_counts[rows], yall, w)
    return _record(len(y), int(failed.sum()), judge, people, corrected, lam)


def _design(a: Audit, audit: str) -> list[str]:
    s = a.sample
    if s is None:
        return [f"No audit sample is stored for this source: the {a.n} trajectories {audit} finished are used as"
                " if drawn at random, which holds only if they were (draw one with `mast sample`)."]
    design = f"stratified by {s.stratify}, weighted by 1/inclusion probability" if s.stratify else "simple random"
    notes = [f"Audit sample {s.tag!r} ({design}, seed {s.seed}): {s.size} of {s.population} trajectories drawn from"
             f" {s.source}; {a.n} of them finished by {audit}."]
    if a.audited_outside:
        notes.append(f"{a.audited_outside} trajectories {audit} finished outside the sample are not used.")
    return notes


NOTES = [
    "judge: the judge alone over all its trajectories (Wilson interval; gap: Newcombe), as if it were"
    " truth. human: the audited people alone (CLT interval, weighted when stratified). ppi:"
    " prediction-powered inference (Angelopoulos et al., Science 2023), the judge on all N corrected by"
    " the people on the n audited; lambda is its PPI++ power tuning (1 = plain PPI, used below 10"
    " audited positives).",
    "n_effective: how many audited trajectories people alone would need for PPI's precision."
    " An interval is empty where the audited values do not vary (no positive seen); with fewer than 10"
    " audited positives every interval of that mode is rough. Prevalences and their bounds are clipped"
    " to [0, 1] (the correction can push a rare mode's raw estimate below 0).",
]


#: Corrected modes a finding names (those the judge is furthest off, outside PPI's interval).
TOP_CORRECTIONS = 3


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def findings(audit: str, n: int, big_n: int, prevalence: list[dict], mean_failed: dict) -> list[Finding]:
    """The key findings the audit adds: the modes whose judge-alone prevalence lies furthest
    outside PPI's interval, and the corrected mean number of modes per failed trajectory."""
    off = [r for r in prevalence if r["ppi_ci_low"] is not None and r["judge"] is not None
           and not r["ppi_ci_low"] <= r["judge"] <= r["ppi_ci_high"]]
    off.sort(key=lambda r: -abs(r["judge"] - r["ppi"]))
    where = f"{audit}'s audit of {n:,} of {big_n:,} trajectories (PPI)"
    if off:
        shown = "; ".join(f"{r['mode']} judge {_pct(r['judge'])}, corrected {_pct(r['ppi'])}"
                          f" [{_pct(r['ppi_ci_low'])}, {_pct(r['ppi_ci_high'])}]" for r in off[:TOP_CORRECTIONS])
        more = f"; {len(off) - TOP_CORRECTIONS} more in the tables" if len(off) > TOP_CORRECTIONS else ""
        text = f"judge corrected by {where}: {shown}{more}"
    else:
        text = f"{where}: the judge's prevalence lies within the corrected interval for every mode"
    data = {"audit": audit, "n_audit": n, "n_total": big_n,
            "outside": [{k: r[k] for k in ("mode", "judge", "ppi", "ppi_ci_low", "ppi_ci_high")} for r in off]}
    out = [Finding("judge_corrected", text, data)]
    m = mean_failed
    if m["ppi"] is not None:
        ci = (f"[{m['ppi_ci_low']:.2f}, {m['ppi_ci_high']:.2f}]" if m["ppi_ci_low"] is not None
              else "interval undefined")
        out.append(Finding("mean_modes_failed_corrected",
                           f"mean modes per failed trajectory, corrected: {m['ppi']:.2f} {ci} (judge alone"
                           f" {m['judge']:.2f}; {m['n_audit']} audited of {m['n_total']:,} failed)",
                           {k: m[k] for k in ("n_audit", "n_total", "judge", "ppi", "ppi_ci_low", "ppi_ci_high")}))
    return out


def audit_section(db: Database, source: str, audit: str, taxonomy: Taxonomy, filters: TrajectoryFilter | None,
                  by: tuple[str, ...], sample_tag: str | None = None) -> tuple[Section, dict, list[Finding]]:
    """The judge-corrected section of a report over ``source``, audited by ``audit``, what the
    header says about the audit, and the key findings it adds."""
    if audit == source:
        raise ReportError("--audit names the people who checked the source, not the source itself")
    sample = get_sample(db, sample_tag) if sample_tag else latest_sample(db, source)
    if sample is not None and sample.source != source:
        raise ReportError(f"sample {sample.tag!r} was drawn from {sample.source}, not from {source}")
    frame = build(db, [source], taxonomy, filters)
    people = build(db, [audit], taxonomy, filters)
    items = {i.trajectory_id: i.stratum for i in sample_items(db, sample.tag)} if sample else {}
    a = Audit(frame, source, people, audit, sample, items)
    if a.n < 2:
        raise ReportError(f"{audit} finished {a.n} of the audited trajectories of {source}: PPI needs at least 2")
    everything = np.ones(frame.n, dtype=bool)
    modes = a.modes
    tables = [Table("prevalence_ppi", "Prevalence per mode: judge alone, audited people alone, judge corrected (PPI)",
                    ["mode", *ESTIMATE_COLUMNS], [{"mode": m, **_prevalence(a, everything, j)}
                                                  for j, m in enumerate(modes)], _design(a, audit))]
    for column in by:
        levels = sorted(set(frame.groups[column].tolist()))
        records = [{column: g, "mode": m, **_prevalence(a, frame.groups[column] == g, j)}
                   for g in levels for j, m in enumerate(modes)]
        tables.append(Table(f"prevalence_ppi_by_{column}", f"Prevalence per mode by {column} (judge, people, PPI)",
                            [column, "mode", *ESTIMATE_COLUMNS], records))
    gap_columns = ["mode", "n_audit_failed", "n_audit_succeeded", "n_total",
                   *(f"{e}_gap{part}_pp" for e in ("judge", "human", "ppi") for part in ("", "_ci_low", "_ci_high")),
                   "n_effective"]
    tables.append(Table("gap_ppi", "Failed minus successful prevalence in percentage points (judge, people, PPI)",
                        gap_columns, [{"mode": m, **_gap(a, everything, j)} for j, m in enumerate(modes)]))
    mean_rows = [{"group": "all", **_mean_modes(a, everything)}]
    for column in by:
        for g in sorted(set(frame.groups[column].tolist())):
            mean_rows.append({"group": f"{column}={g}", **_mean_modes(a, frame.groups[column] == g)})
    tables.append(Table("mean_modes_ppi", "Mean distinct modes per failed trajectory (judge, people, PPI)",
                        ["group", *ESTIMATE_COLUMNS], mean_rows))
    s = a.sample
    head = {"audit": audit, "audited": a.n, "sample": None if s is None else {
        "tag": s.tag, "stratify": s.stratify, "seed": s.seed, "size": s.size, "population": s.population,
        "strata": {h: {"trajectories": p, "drawn": d} for h, (p, d) in s.strata.items()}}}
    key = findings(audit, a.n, frame.n, tables[0].records, mean_rows[0])
    return Section("Judge corrected by the audit (prediction-powered inference)", tables, NOTES), head, key
