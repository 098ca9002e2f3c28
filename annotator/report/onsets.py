"""Where things break: onset steps of the modes, absolute and relative to the trajectory length,
and the first onset against decisive-error attributions (Who&When) where a trajectory has one.

An onset is the step where a mode first shows (0-based). Relative onset = onset / number of
steps, so 0 is the first step and values near 1 the end of the run. "Comes first" counts, per
mode, the trajectories where its onset is the earliest of all modes present there (ties
count for each tied mode).
"""

from __future__ import annotations

import numpy as np
from statsmodels.stats.proportion import proportion_confint
from sqlite_utils import Database

from annotator.report.frame import Frame
from annotator.report.sources import rows_for
from annotator.report.tables import num
from annotator.store import report_tables


def _quantiles(values: np.ndarray) -> dict:
    if not len(values):
        return {"mean": None, "q1": None, "median": None, "q3": None}
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return {"mean": num(values.mean()), "q1": num(q1), "median": num(med), "q3": num(q3)}


def onset_matrices(frame: Frame, present: np.ndarray, onset: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The onsets of the present cells (NaN elsewhere), the same relative to the trajectory's
    length, and each trajectory's first onset (NaN where it has none): what every table here reads."""
    on = np.where(present, onset, np.nan)
    with np.errstate(all="ignore"):
        rel = on / np.where(frame.n_steps > 0, frame.n_steps, np.nan)[:, None]
    has_any = ~np.isnan(on).all(axis=1)
    first_step = np.full(len(on), np.nan)
    if has_any.any():
        first_step[has_any] = np.nanmin(on[has_any], axis=1)
    return on, rel, first_step


def onset_records(frame: Frame, present: np.ndarray, on: np.ndarray, rel: np.ndarray,
                  first_step: np.ndarray) -> list[dict]:
    """Per mode: how many present cells give an onset, its distribution, and how often it is first.

    ``on``, ``rel`` and ``first_step`` are :func:`onset_matrices`.
    """
    first = on == first_step[:, None]
    out = []
    for j, mode in enumerate(frame.mode_ids):
        col = on[:, j][~np.isnan(on[:, j])]
        rcol = rel[:, j][~np.isnan(rel[:, j])]
        a, r = _quantiles(col), _quantiles(rcol)
        out.append({
            "mode": mode, "present": int(present[:, j].sum()), "with_onset": int(len(col)),
            "onset_mean": a["mean"], "onset_median": a["median"], "onset_q1": a["q1"], "onset_q3": a["q3"],
            "relative_mean": r["mean"], "relative_median": r["median"],
            "comes_first": int(first[:, j].sum()),
            "comes_first_share": num(first[:, j].sum() / len(col)) if len(col) else None,
        })
    return out


def relative_histogram(rel: np.ndarray, bins: int = 10) -> list[dict]:
    """How many onsets fall in each tenth of the run (all modes together), up to the last tenth
    that holds one; ``rel`` as from :func:`onset_matrices`."""
    rel = rel.ravel()
    rel = rel[~np.isnan(rel)]
    counts, edges = np.histogram(np.clip(rel, 0, 1), bins=bins, range=(0, 1))
    last = int(np.flatnonzero(counts).max()) + 1 if counts.any() else bins
    return [{"from": num(edges[i], 3), "to": num(edges[i + 1], 3), "onsets": int(counts[i])} for i in range(last)]


def against_attributions(db: Database, frame: Frame, first: np.ndarray) -> list[dict]:
    """The source's first onset against each decisive-error attribution (Who&When's "who" and "when").

    Per attributing source, over the counted trajectories it attributed: Who&When's own two
    scores (Zhang et al., ICML 2025): **step-level accuracy**, the share of trajectories with an
    attributed step whose earliest onset is that step, and **agent-level accuracy**, the share
    with an attributed agent where the agent of the earliest-onset step is that agent; a
    trajectory the source gave no onset counts as a miss, as a prediction that names nothing
    does there. Intervals: Wilson 95%. Step indices are compared as integers and agent names as
    whole names (case-insensitive), not as substrings as the paper's scorer does. Beside them,
    over the trajectories with an onset: how often the earliest onset is within 0, 1 and 3
    steps of the attributed one and the mean absolute distance. ``first`` is each trajectory's
    first onset, as from :func:`onset_matrices`.
    """
    attributions = report_tables.attribution_rows(db)
    pos, counted = rows_for(frame.ids, np.asarray([r[0] for r in attributions], dtype=str))
    by_source: dict[str, list[tuple[str, int | None, int | None, str | None]]] = {}
    for (tid, source, step, agent), i, ok in zip(attributions, pos.tolist(), counted.tolist(), strict=True):
        if ok and (step is not None or agent is not None):
            onset = None if np.isnan(first[i]) else int(first[i])
            by_source.setdefault(source, []).append((tid, onset, step, agent))
    agents = report_tables.step_agents(db, sorted({(t, f) for rows in by_source.values() for t, f, _, _ in rows
                                                   if f is not None}))
    out = []
    for source, rows in sorted(by_source.items()):
        timed = [(f, s) for _, f, s, _ in rows if f is not None and s is not None]
        diff = np.array([abs(f - s) for f, s in timed])
        step_hits = [f is not None and f == s for _, f, s, _ in rows if s is not None]
        agent_hits = [f is not None and _same_agent(agents.get((t, f)), a) for t, f, _, a in rows if a is not None]
        named = [(agents.get((t, f)), a) for t, f, _, a in rows if a is not None and f is not None]
        rec = {"attributed_by": source, "attributed": len(rows), **_accuracy("step", step_hits),
               **_accuracy("agent", agent_hits), "trajectories": len(timed)}
        rec.update({
            "exact": num((diff == 0).mean()) if len(diff) else None,
            "within_1": num((diff <= 1).mean()) if len(diff) else None,
            "within_3": num((diff <= 3).mean()) if len(diff) else None,
            "mean_abs_diff": num(diff.mean()) if len(diff) else None,
            "median_abs_diff": num(np.median(diff)) if len(diff) else None,
            "with_agent": len(named),
            "same_agent": num(np.mean([_same_agent(s, a) for s, a in named])) if named else None,
        })
        out.append(rec)
    return out


def _same_agent(step_agent: str | None, blamed: str | None) -> bool:
    return step_agent is not None and blamed is not None and step_agent.strip().casefold() == blamed.strip().casefold()


def _accuracy(what: str, hits: list[bool]) -> dict:
    """Who&When accuracy of ``what`` (step or agent) with its Wilson 95% interval, over ``hits``."""
    n, k = len(hits), int(sum(hits))
    if not n:
        return {f"{what}_n": 0, f"{what}_accuracy": None, f"{what}_accuracy_ci_low": None,
                f"{what}_accuracy_ci_high": None}
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    return {f"{what}_n": n, f"{what}_accuracy": num(k / n), f"{what}_accuracy_ci_low": num(lo),
            f"{what}_accuracy_ci_high": num(hi)}
