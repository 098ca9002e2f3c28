"""Judge-corrected estimates: a report's section when people audited a sample of a judge's run.

Three estimates side by side for each quantity, each with its 95% interval: the judge alone
over its N trajectories (naive: treats the judge as truth), the audited people alone over their
n, and the judge corrected by the audit. Quantities: each mode's prevalence, overall and per
group, and the failed-minus-successful prevalence gap (:mod:`annotator.report.stratified`:
stratified PPI with the judge's verdict as the stratum, intervals that hold with few positives;
the gap's failed and successful parts are disjoint, so MOVER combines them); the mean number of
modes per failed trajectory (:mod:`annotator.report.ppi`: PPI++). ``n_effective`` is how many
audited trajectories the people-only estimate would need for the corrected one's precision.

The audited trajectories are those of the sample (``mast sample``) that the people finished.
A stratified sample is estimated stratum by stratum, each weighted by its share of the
population (the Horvitz–Thompson weights 1/π with π = audited / stratum size), so a stratum
the people left partly undone counts what they did. Without a stored sample every trajectory
both sources finished counts, as if drawn at random, and the section says so.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from sqlite_utils import Database
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep

from annotator.errors import ReportError
from annotator.report import audit_findings, ppi
from annotator.report.frame import FAILED, SUCCEEDED, Frame, build
from annotator.report.prevalence import wilson
from annotator.report.sampling import strata_of
from annotator.report.stratified import UNDEFINED, Share, mover, share
from annotator.report.tables import Finding, Section, Table, num
from annotator.store.samples import Sample, get_sample, latest_sample, sample_items
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

ESTIMATE_COLUMNS = ["n_audit", "n_total", "judge", "judge_ci_low", "judge_ci_high", "human", "human_ci_low",
                    "human_ci_high", "ppi", "ppi_ci_low", "ppi_ci_high", "n_effective"]


class Audit:
    """The judge's frame, the audited rows in it, their people's labels and every row's stratum."""

    def __init__(self, frame: Frame, source: str, people: Frame, audit: str, sample: Sample | None,
                 items: dict[str, str]) -> None:
        self.frame, self.sample = frame, sample
        #: The modes both the judge and the people cover (a partial source is audited on its modes).
        self.modes = tuple(m for m in frame.mode_ids if m in people.mode_ids)
        jcols = [frame.mode_ids.index(m) for m in self.modes]
        pcols = [people.mode_ids.index(m) for m in self.modes]
        judge = frame.labels[source]
        self.judge_present, self.judge_known = judge.present[:, jcols], judge.known[:, jcols]
        # An unknown verdict predicts absent: the correction stays unbiased.
        self.yhat_all = self.judge_present.astype(float)
        self.judge_counts = self.yhat_all.sum(axis=1)
        where = {t: i for i, t in enumerate(people.ids.tolist())}
        in_sample = [i for i, t in enumerate(frame.ids.tolist()) if t in where and (sample is None or t in items)]
        self.rows = np.asarray(in_sample, dtype=np.int64)
        mine = np.asarray([where[t] for t in frame.ids[self.rows].tolist()], dtype=np.int64)
        person = people.labels[audit]
        self.y, self.y_known = person.present[mine][:, pcols].astype(float), person.known[mine][:, pcols]
        #: Every row's stratum under the sample's design (one stratum for a simple random audit).
        self.stratum_all = strata_of(frame, source, sample.stratify if sample else None)
        judged = set(frame.ids.tolist())
        #: Trajectories the people finished (and the judge labelled) outside the sample: not used.
        self.audited_outside = 0 if sample is None else sum(
            1 for t in people.ids.tolist() if t not in items and t in judged)

    @property
    def n(self) -> int:
        return len(self.rows)


def _count(value: float) -> int | None:
    """An effective sample size as a whole number of trajectories (None where undefined)."""
    return int(round(value)) if np.isfinite(value) else None


def _effective(n: int, people: Share, corrected: Share) -> int | None:
    """n × (people-only width / corrected width)²: the audit size people alone would need."""
    with np.errstate(all="ignore"):
        ratio = people.width / corrected.width if corrected.width > 0 and people.width > 0 else np.nan
    return _count(n * ratio**2)


def _share(est: ppi.Estimates) -> Share:
    return Share(float(est.value[0]), float(est.low[0]), float(est.high[0]))


def _record(n: int, big_n: int, judge: Share, people: Share, corrected: Share) -> dict:
    out: dict = {"n_audit": n, "n_total": big_n}
    for name, e in (("judge", judge), ("human", people), ("ppi", corrected)):
        out[name] = num(e.value)
        out[f"{name}_ci_low"] = num(e.low)
        out[f"{name}_ci_high"] = num(e.high)
    out["n_effective"] = _effective(n, people, corrected)
    return out


def _subset(a: Audit, mask_all: np.ndarray, column: int):
    """The audited rows inside ``mask_all`` whose people's verdict on ``column`` is known: the
    people's values, the judge's verdicts there, their strata; the judge's verdicts and the
    strata of every row of the mask."""
    inside = mask_all[a.rows] & a.y_known[:, column]
    rows = a.rows[inside]
    return (a.y[inside, column], a.yhat_all[rows, column], a.stratum_all[rows],
            a.yhat_all[mask_all, column], a.stratum_all[mask_all])


def _estimates(a: Audit, mask_all: np.ndarray, column: int, alpha: float = 0.05) -> tuple[int, Share, Share]:
    """The audited count, the people-only and the judge-corrected share inside ``mask_all``."""
    y, yhat, stratum, yall, stratum_all = _subset(a, mask_all, column)
    return (len(y), share(y, stratum, stratum_all, alpha=alpha),
            share(y, stratum, stratum_all, yhat, yall, alpha=alpha))


def _judge_share(a: Audit, mask_all: np.ndarray, column: int) -> Share:
    known = a.judge_known[mask_all, column]
    count, nobs = (a.judge_present[mask_all, column] & known).sum(), known.sum()
    lo, hi = wilson(np.asarray([count]), np.asarray([nobs]))
    return Share(count / nobs if nobs else np.nan, float(lo[0]), float(hi[0]))


def _prevalence(a: Audit, mask_all: np.ndarray, column: int) -> dict:
    n, people, corrected = _estimates(a, mask_all, column)
    return _record(n, int(mask_all.sum()), _judge_share(a, mask_all, column), people, corrected)


def _difference(first: Share, second: Share) -> Share:
    if np.isnan([first.value, second.value]).any():
        return UNDEFINED
    return mover([(1.0, first), (-1.0, second)])


def _outcomes(a: Audit, mask_all: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return mask_all & (a.frame.failed == FAILED), mask_all & (a.frame.failed == SUCCEEDED)


def _gap_p_value(a: Audit, mask_all: np.ndarray, column: int, gap: Share) -> float | None:
    """The corrected gap's two-sided p-value, by inverting its interval: the α at which the
    (1 − α) interval's bound nearest 0 touches 0 (MOVER intervals have no closed-form test)."""
    if not np.isfinite(gap.value) or gap.value == 0:
        return None if not np.isfinite(gap.value) else 1.0
    failed, succeeded = _outcomes(a, mask_all)

    def bound(alpha: float) -> float:
        d = _difference(_estimates(a, failed, column, alpha)[2], _estimates(a, succeeded, column, alpha)[2])
        return d.low if gap.value > 0 else -d.high

    lo, hi = 1e-12, 1 - 1e-9
    if bound(lo) >= 0:
        return lo
    if bound(hi) <= 0:
        return 1.0
    return float(brentq(bound, lo, hi, xtol=1e-12))


def _gap(a: Audit, mask_all: np.ndarray, column: int) -> dict:
    failed, succeeded = _outcomes(a, mask_all)
    counts = [(a.judge_present[m, column] & a.judge_known[m, column]).sum() for m in (failed, succeeded)]
    nobs = [a.judge_known[m, column].sum() for m in (failed, succeeded)]
    judge = UNDEFINED
    if min(nobs) > 0:
        lo, hi = confint_proportions_2indep(counts[0], nobs[0], counts[1], nobs[1], method="newcomb", compare="diff")
        judge = Share(counts[0] / nobs[0] - counts[1] / nobs[1], lo, hi)
    (nf, pf, cf), (ns, ps, cs) = _estimates(a, failed, column), _estimates(a, succeeded, column)
    people, corrected = _difference(pf, ps), _difference(cf, cs)
    out: dict = {"n_audit_failed": nf, "n_audit_succeeded": ns, "n_total": int((failed | succeeded).sum())}
    for name, e in (("judge", judge), ("human", people), ("ppi", corrected)):
        out[f"{name}_gap_pp"] = num(e.value * 100)
        out[f"{name}_gap_ci_low_pp"] = num(e.low * 100)
        out[f"{name}_gap_ci_high_pp"] = num(e.high * 100)
    out["n_effective"] = _effective(nf + ns, people, corrected)
    out["ppi_gap_p"] = num(_gap_p_value(a, mask_all, column, corrected))
    return out


def _with_q(records: list[dict]) -> list[dict]:
    """Benjamini–Hochberg q of each mode's corrected-gap p-value, over the modes that have one."""
    tested = [r for r in records if r["ppi_gap_p"] is not None]
    q = multipletests([r["ppi_gap_p"] for r in tested], method="fdr_bh")[1] if tested else []
    by_mode = {r["mode"]: num(v) for r, v in zip(tested, q, strict=True)}
    return [{**r, "ppi_gap_bh_q": by_mode.get(r["mode"])} for r in records]


def _mean_modes(a: Audit, mask_all: np.ndarray) -> dict:
    failed = mask_all & (a.frame.failed == FAILED)
    inside = failed[a.rows] & a.y_known.all(axis=1)
    rows = a.rows[inside]
    y, yall, stratum, stratum_all = a.y[inside].sum(axis=1), a.judge_counts[failed], a.stratum_all[rows], \
        a.stratum_all[failed]
    judge = _share(ppi.classical(yall))
    people = _share(ppi.stratified(y, a.judge_counts[rows], yall, stratum, stratum_all, lam=0.0))
    corrected = _share(ppi.stratified(y, a.judge_counts[rows], yall, stratum, stratum_all))
    return _record(len(y), int(failed.sum()), judge, people, corrected)


def _design(a: Audit, audit: str) -> list[str]:
    s = a.sample
    if s is None:
        return [f"No audit sample is stored for this source: the {a.n} trajectories {audit} finished are used as"
                " if drawn at random, which holds only if they were (draw one with `mast sample`)."]
    design = (f"stratified by {s.stratify}: each stratum estimated from its audited trajectories, weighted by its"
              " share of the population" if s.stratify else "simple random")
    notes = [f"Audit sample {s.tag!r} ({design}, seed {s.seed}): {s.size} of {s.population} trajectories drawn from"
             f" {s.source}; {a.n} of them finished by {audit}."]
    if a.audited_outside:
        notes.append(f"{a.audited_outside} trajectories {audit} finished outside the sample are not used.")
    return notes


NOTES = [
    "judge: the judge alone over all its trajectories (Wilson interval; gap: Newcombe), as if it were"
    " truth. human: the audited people alone. ppi: the judge on all N corrected by the people on the n"
    " audited (prediction-powered inference, Angelopoulos et al., Science 2023): for a prevalence,"
    " stratified PPI with the judge's verdict as the stratum (Fisch et al. 2024), never less precise than"
    " people alone; for mean modes, PPI++ power tuning (Angelopoulos, Duchi and Zrnic 2023).",
    "Prevalence and gap intervals: Agresti-Coull per stratum, combined by MOVER (Zou and Donner 2008), so"
    " they hold with few audited positives; mean-mode intervals: normal. n_effective: how many audited"
    " trajectories people alone would need for the corrected estimate's precision. ppi_gap_p: the"
    " corrected gap's p-value (its interval inverted), ppi_gap_bh_q: Benjamini-Hochberg over the modes.",
]


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
        levels = frame.levels(column)
        records = [{column: g, "mode": m, **_prevalence(a, frame.in_level(column, g), j)}
                   for g in levels for j, m in enumerate(modes)]
        tables.append(Table(f"prevalence_ppi_by_{column}", f"Prevalence per mode by {column} (judge, people, PPI)",
                            [column, "mode", *ESTIMATE_COLUMNS], records))
    gap_columns = ["mode", "n_audit_failed", "n_audit_succeeded", "n_total",
                   *(f"{e}_gap{part}_pp" for e in ("judge", "human", "ppi") for part in ("", "_ci_low", "_ci_high")),
                   "n_effective", "ppi_gap_p", "ppi_gap_bh_q"]
    gaps = _with_q([{"mode": m, **_gap(a, everything, j)} for j, m in enumerate(modes)])
    tables.append(Table("gap_ppi", "Failed minus successful prevalence in percentage points (judge, people, PPI)",
                        gap_columns, gaps))
    mean_rows = [{"group": "all", **_mean_modes(a, everything)}]
    for column in by:
        for g in frame.levels(column):
            mean_rows.append({"group": f"{column}={g}", **_mean_modes(a, frame.in_level(column, g))})
    tables.append(Table("mean_modes_ppi", "Mean distinct modes per failed trajectory (judge, people, PPI)",
                        ["group", *ESTIMATE_COLUMNS], mean_rows))
    s = a.sample
    head = {"audit": audit, "audited": a.n, "sample": None if s is None else {
        "tag": s.tag, "stratify": s.stratify, "seed": s.seed, "size": s.size, "population": s.population,
        "strata": {h: {"trajectories": p, "drawn": d} for h, (p, d) in s.strata.items()}}}
    key = audit_findings.findings(frame, audit, a.n, tables[0].records, gaps, mean_rows[0])
    return Section("Judge corrected by the audit (prediction-powered inference)", tables, NOTES), head, key
