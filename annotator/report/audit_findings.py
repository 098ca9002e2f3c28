"""The key findings an audit adds to a report: the judge-corrected figures, in the words of the
report's own findings (:mod:`annotator.report.findings`).

Four lines: the modes whose judge-alone prevalence lies furthest outside the corrected interval;
the top modes by corrected prevalence; the corrected failed-minus-successful gap, named the
strongest predictor of failure under the report's rule (BH q below ``ALPHA``, both groups with
at least ``MIN_GROUP`` *audited* trajectories, since the audit carries the correction's
precision), otherwise the sentence that no mode separates the groups; and the corrected mean
number of modes per failed trajectory.
"""

from __future__ import annotations

from annotator.report.findings import TOP_MODES, supported_predictor
from annotator.report.frame import Frame
from annotator.report.tables import Finding

#: Corrected modes a finding names (those the judge is furthest off, outside the corrected interval).
TOP_CORRECTIONS = 3
ESTIMATE = ("mode", "judge", "ppi", "ppi_ci_low", "ppi_ci_high")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _interval(low: float | None, high: float | None) -> str:
    return "interval undefined" if low is None else f"[{_pct(low)}, {_pct(high)}]"


def corrections(audit: str, n: int, big_n: int, prevalence: list[dict]) -> Finding:
    """The modes whose judge-alone prevalence lies furthest outside the corrected interval."""
    off = [r for r in prevalence if r["ppi_ci_low"] is not None and r["judge"] is not None
           and not r["ppi_ci_low"] <= r["judge"] <= r["ppi_ci_high"]]
    off.sort(key=lambda r: -abs(r["judge"] - r["ppi"]))
    where = f"{audit}'s audit of {n:,} of {big_n:,} trajectories (PPI)"
    if off:
        shown = "; ".join(f"{r['mode']} judge {_pct(r['judge'])}, corrected {_pct(r['ppi'])}"
                          f" {_interval(r['ppi_ci_low'], r['ppi_ci_high'])}" for r in off[:TOP_CORRECTIONS])
        more = f"; {len(off) - TOP_CORRECTIONS} more in the tables" if len(off) > TOP_CORRECTIONS else ""
        text = f"judge corrected by {where}: {shown}{more}"
    else:
        text = f"{where}: the judge's prevalence lies within the corrected interval for every mode"
    data = {"audit": audit, "n_audit": n, "n_total": big_n, "outside": [{k: r[k] for k in ESTIMATE} for r in off]}
    return Finding("judge_corrected", text, data)


def top_modes(prevalence: list[dict]) -> Finding:
    """The most prevalent modes by corrected prevalence, with their intervals and the judge's figure."""
    ranked = sorted((r for r in prevalence if r["ppi"]), key=lambda r: (-r["ppi"], r["mode"]))[:TOP_MODES]
    shown = ", ".join(f"{r['mode']} {_pct(r['ppi'])} {_interval(r['ppi_ci_low'], r['ppi_ci_high'])}"
                      f" (judge {_pct(r['judge'])})" for r in ranked) or "none present"
    return Finding("top_modes_corrected", f"top modes, judge corrected: {shown}",
                   {"modes": [{k: r[k] for k in ESTIMATE} for r in ranked]})


def predictor(frame: Frame, gaps: list[dict]) -> Finding:
    """The corrected gap of largest positive value, named only when it is supported."""
    positive = sorted((g for g in gaps if g["ppi_gap_pp"] is not None and g["ppi_gap_pp"] > 0),
                      key=lambda g: (-g["ppi_gap_pp"], g["mode"]))
    nf = max((g["n_audit_failed"] for g in gaps), default=0)
    ns = max((g["n_audit_succeeded"] for g in gaps), default=0)
    top = positive[0] if positive else None
    candidate = None if top is None else {
        "mode": top["mode"], "gap_pp": top["ppi_gap_pp"], "gap_ci_low_pp": top["ppi_gap_ci_low_pp"],
        "gap_ci_high_pp": top["ppi_gap_ci_high_pp"], "bh_q": top["ppi_gap_bh_q"],
        "failed_n": top["n_audit_failed"], "succeeded_n": top["n_audit_succeeded"]}
    finding, _ = supported_predictor(
        frame, "strongest_predictor_corrected", "strongest predictor of failure, judge corrected (audited)",
        candidate, f"once the judge is corrected, at this audit size ({nf} failed, {ns} succeeded audited)",
        {"audited_failed": nf, "audited_succeeded": ns})
    return finding


def mean_modes(m: dict) -> list[Finding]:
    """The corrected mean number of modes per failed trajectory (none without a corrected value)."""
    if m["ppi"] is None:
        return []
    ci = f"[{m['ppi_ci_low']:.2f}, {m['ppi_ci_high']:.2f}]" if m["ppi_ci_low"] is not None else "interval undefined"
    return [Finding("mean_modes_failed_corrected",
                    f"mean modes per failed trajectory, corrected: {m['ppi']:.2f} {ci} (judge alone"
                    f" {m['judge']:.2f}; {m['n_audit']} audited of {m['n_total']:,} failed)",
                    {k: m[k] for k in ("n_audit", "n_total", "judge", "ppi", "ppi_ci_low", "ppi_ci_high")})]


def findings(frame: Frame, audit: str, n: int, prevalence: list[dict], gaps: list[dict],
             mean_failed: dict) -> list[Finding]:
    """Every finding the audit adds, in the order the block shows them."""
    return [corrections(audit, n, frame.n, prevalence), top_modes(prevalence), predictor(frame, gaps),
            *mean_modes(mean_failed)]
