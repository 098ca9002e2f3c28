"""Key findings: the few lines a report opens with, before any table, in every format.

A reader who stops after five lines should leave with what the data support and nothing
more: how many trajectories of each kind were counted, which modes each system shows most,
how many modes a failed trajectory shows (with its interval), and the strongest predictor of
failure **only when it is supported**: the mode with the largest failed-minus-successful gap
is named when its Benjamini–Hochberg q is below :data:`ALPHA` and both outcome groups hold at
least :data:`MIN_GROUP` trajectories; otherwise the block says that no mode separates failed
from successful runs at this sample size. An interval that a group of one trajectory would
collapse to a point is shown as undefined (see :func:`annotator.report.bootstrap.withhold_degenerate`).

Each finding is a :class:`annotator.report.tables.Finding`: a stable ``key``, the line every rendering prints, and the
numbers behind it for JSON. Other analyses add their own lines (``Document.findings`` is a
plain list), e.g. estimates corrected by a human audit next to the judge's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from annotator.report import bootstrap
from annotator.report.frame import FAILED, SUCCEEDED, UNKNOWN, Frame
from annotator.report.tables import Finding, num

#: Largest BH q at which the top gap is named a predictor.
ALPHA = 0.05
#: Fewest failed and fewest successful trajectories (that decided the mode) to name a predictor.
MIN_GROUP = 10
#: Modes listed per system, and systems listed (the largest first).
TOP_MODES = 3
MAX_GROUPS = 5


def _levels(frame: Frame, column: str) -> list[str]:
    """The column's levels, largest first, at most :data:`MAX_GROUPS`."""
    values, counts = frame.levels(column), np.bincount(frame.codes(column), minlength=len(frame.levels(column)))
    order = sorted(range(len(values)), key=lambda i: (-counts[i], values[i]))
    return [values[i] for i in order[:MAX_GROUPS]]


def _more(frame: Frame, column: str) -> str:
    extra = len(frame.levels(column)) - MAX_GROUPS
    return f"; {extra} more in the tables" if extra > 0 else ""


def mean_modes_columns(frame: Frame, counts: np.ndarray, column: str) -> np.ndarray:
    """Bootstrap columns of the mean modes per failed trajectory in each shown level of ``column``:
    per level, the modes of its failed trajectories and the number of them."""
    failed = frame.failed == FAILED
    cols = []
    for level in _levels(frame, column):
        in_level = failed & frame.in_level(column, level)
        cols += [counts * in_level, in_level]
    return np.column_stack(cols) if cols else np.zeros((frame.n, 0))


def _interval_text(lo: float | None, hi: float | None, n: int) -> str:
    if lo is None or hi is None:
        return f"n = {n}, interval undefined"
    return f"n = {n}, 95% boot [{lo:.2f}, {hi:.2f}]"


def _name(level: str, column: str) -> str:
    """A level as a finding names it (the frame writes an unknown value as "-")."""
    return f"(no {column})" if level == "-" else level


def counts(frame: Frame, column: str) -> list[Finding]:
    """How many trajectories were counted, by outcome, and per level of ``column``."""
    f, s, u = (int((frame.failed == code).sum()) for code in (FAILED, SUCCEEDED, UNKNOWN))
    out = [Finding("counts", f"{frame.n:,} trajectories counted: {f:,} failed, {s:,} succeeded, {u:,} outcome unknown",
                   {"trajectories": frame.n, "failed": f, "succeeded": s, "outcome_unknown": u})]
    levels = _levels(frame, column)
    if len(frame.levels(column)) > 1:
        per = []
        for level in levels:
            rows = frame.in_level(column, level)
            per.append({column: level, "trajectories": int(rows.sum()),
                        "failed": int((rows & (frame.failed == FAILED)).sum()),
                        "succeeded": int((rows & (frame.failed == SUCCEEDED)).sum())})
        text = "; ".join(f"{_name(p[column], column)} {p['trajectories']} ({p['failed']} failed,"
                         f" {p['succeeded']} succeeded)"
                         for p in per)
        out.append(Finding(f"counts_by_{column}", f"by {column}: {text}{_more(frame, column)}", {"groups": per}))
    return out


def top_modes(frame: Frame, present: np.ndarray, known: np.ndarray, column: str) -> list[Finding]:
    """Per level of ``column`` (all trajectories when there is one level), its most prevalent modes."""
    levels = _levels(frame, column) if len(frame.levels(column)) > 1 else [None]
    out = []
    for level in levels:
        rows = np.ones(frame.n, bool) if level is None else frame.in_level(column, level)
        with_mode = (present & known)[rows].sum(axis=0)
        decided = known[rows].sum(axis=0)
        order = sorted((j for j in range(len(frame.mode_ids)) if with_mode[j]),
                       key=lambda j: (-with_mode[j] / decided[j], frame.mode_ids[j]))[:TOP_MODES]
        modes = [{"mode": frame.mode_ids[j], "count": int(with_mode[j]), "n": int(decided[j]),
                  "prevalence": num(with_mode[j] / decided[j])} for j in order]
        where = "all trajectories" if level is None else _name(level, column)
        shown = ", ".join(f"{m['mode']} {m['prevalence']:.0%} ({m['count']}/{m['n']})" for m in modes) or "none present"
        out.append(Finding("top_modes", f"top modes, {where}: {shown}", {column: level, "modes": modes}))
    return out


def mean_modes(frame: Frame, counts_: np.ndarray, overall: dict, by_level: np.ndarray | None,
               column: str) -> list[Finding]:
    """Mean modes per failed (and per successful) trajectory with their intervals, then per level
    of ``column`` for the failed ones. ``overall`` is the mean_modes record; ``by_level`` the
    replicated sums of :func:`mean_modes_columns` (None without bootstrap)."""
    nf, ns = int(overall["failed"]), int(overall["succeeded"])
    text = []
    for outcome, n in (("failed", nf), ("succeeded", ns)):
        mean = overall[f"mean_modes_{outcome}"]
        if mean is None:
            continue
        iv = _interval_text(overall.get(f"mean_modes_{outcome}_boot_low"), overall.get(f"mean_modes_{outcome}_boot_high"), n)
        text.append(f"{'failed' if outcome == 'failed' else 'successful'} {mean:.2f} ({iv})")
    out = [Finding("mean_modes", "mean modes per trajectory: " + ("; ".join(text) or "no trajectory with an outcome"),
                   {k: v for k, v in overall.items() if k.startswith("mean_modes") or k in ("failed", "succeeded")})]
    levels = _levels(frame, column)
    if len(frame.levels(column)) > 1 and nf:
        per, parts = [], []
        n = np.array([int((frame.in_level(column, lv) & (frame.failed == FAILED)).sum()) for lv in levels])
        lo = hi = np.full(len(levels), np.nan)
        if by_level is not None and len(by_level):
            means = bootstrap.ratio(by_level[:, 0::2], by_level[:, 1::2])
            lo, hi = bootstrap.withhold_degenerate(*bootstrap.interval(means)[:2], n)
        for i, level in enumerate(levels):
            if not n[i]:
                continue
            rows = frame.in_level(column, level) & (frame.failed == FAILED)
            mean, low, high = num(counts_[rows].mean()), num(lo[i]), num(hi[i])
            per.append({column: level, "failed": int(n[i]), "mean_modes_failed": mean, "boot_low": low,
                        "boot_high": high})
            parts.append(f"{_name(level, column)} {mean:.2f} ({_interval_text(low, high, int(n[i]))})")
        out.append(Finding(f"mean_modes_failed_by_{column}", f"mean modes per failed trajectory by {column}: "
                           + "; ".join(parts) + _more(frame, column), {"groups": per}))
    return out


def strongest_predictor(frame: Frame, gaps: list[dict], tests: list[dict]) -> tuple[Finding, str | None]:
    """The supported strongest predictor (named) or the sentence that none is, and its mode id or None."""
    q_of = {r["mode"]: r["bh_q"] for r in tests}
    f, s = int((frame.failed == FAILED).sum()), int((frame.failed == SUCCEEDED).sum())
    top = gaps[0] if gaps and gaps[0]["gap_pp"] is not None and gaps[0]["gap_pp"] > 0 else None
    candidate = None if top is None else {
        "mode": top["mode"], "gap_pp": top["gap_pp"], "gap_ci_low_pp": top["gap_ci_low_pp"],
        "gap_ci_high_pp": top["gap_ci_high_pp"], "bh_q": q_of.get(top["mode"]),
        "failed_n": top["failed_n"], "succeeded_n": top["succeeded_n"]}
    return supported_predictor(frame, "strongest_predictor", "strongest predictor of failure", candidate,
                               f"at this sample size ({f} failed, {s} succeeded)", {"failed": f, "succeeded": s})


def supported_predictor(frame: Frame, key: str, label: str, candidate: dict | None, sample_size: str,
                        data: dict[str, Any]) -> tuple[Finding, str | None]:
    """The finding that names ``candidate`` (the mode of the largest positive gap: ``mode``, ``gap_pp``
    and its interval, ``bh_q``, ``failed_n``, ``succeeded_n``) as ``label`` when its q is below
    :data:`ALPHA` and both groups hold :data:`MIN_GROUP`, else says that no mode separates the
    groups ``sample_size``; and the named mode or None."""
    data = {**data, "alpha": ALPHA, "min_group": MIN_GROUP, "mode": None}
    if candidate is not None:
        data["candidate"] = candidate
        q = candidate["bh_q"]
        if q is not None and q < ALPHA and min(candidate["failed_n"], candidate["succeeded_n"]) >= MIN_GROUP:
            data["mode"] = mode = candidate["mode"]
            ci = (f"95% CI [{candidate['gap_ci_low_pp']:+.1f}, {candidate['gap_ci_high_pp']:+.1f}]"
                  if candidate["gap_ci_low_pp"] is not None else "interval undefined")
            text = (f"{label}: {mode} {frame.taxonomy.mode(mode).name}, gap {candidate['gap_pp']:+.1f} pp ({ci}),"
                    f" BH q = {q:.2g}; {candidate['failed_n']} failed, {candidate['succeeded_n']} succeeded")
            return Finding(key, text, data), mode
    return Finding(key, f"no mode separates failed from successful runs {sample_size}", data), None
