"""Where things break: onset steps of the modes, absolute and relative to the trajectory length,
and the first onset against decisive-error attributions (Who&When) where a trajectory has one.

An onset is the step where a mode first shows (0-based). Relative onset = onset / number of
steps, so 0 is the first step and values near 1 the end of the run. "Comes first" counts, per
mode, the trajectories where its onset is the earliest of all modes present there (ties
count for each tied mode).
"""

from __future__ import annotations

import numpy as np
from sqlite_utils import Database

from annotator.report.frame import Frame
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
    """How many onsets fall in each tenth of the run (all modes together); ``rel`` as from
    :func:`onset_matrices`."""
    rel = rel.ravel()
    rel = rel[~np.isnan(rel)]
    counts, edges = np.histogram(np.clip(rel, 0, 1), bins=bins, range=(0, 1))
    return [{"from": num(edges[i], 3), "to": num(edges[i + 1], 3), "onsets": int(counts[i])} for i in range(bins)]


def against_attributions(db: Database, frame: Frame, first: np.ndarray) -> list[dict]:
    """The source's first onset against each decisive-error attribution (Who&When's "when" and "who").

    Per attributing source, over the counted trajectories it attributed to a step and where
    the label source gave an onset: how often the earliest onset is the attributed step
    (exact, within 1 and 3 steps; step indices compared as integers), the mean absolute
    distance, and how often that earliest step belongs to the attributed agent. ``first`` is
    each trajectory's first onset, as from :func:`onset_matrices`.
    """
    index = {tid: i for i, tid in enumerate(frame.ids.tolist())}
    by_source: dict[str, list[tuple[str, int, int, str | None]]] = {}
    for tid, source, step, agent in report_tables.attribution_rows(db):
        i = index.get(tid)
        if i is not None and step is not None and not np.isnan(first[i]):
            by_source.setdefault(source, []).append((tid, int(first[i]), int(step), agent))
    agents = report_tables.step_agents(db, sorted({(t, f) for rows in by_source.values() for t, f, _, _ in rows}))
    out = []
    for source, rows in sorted(by_source.items()):
        diff = np.array([abs(f - s) for _, f, s, _ in rows])
        named = [(agents.get((t, f)), a) for t, f, _, a in rows if a is not None]
        out.append({
            "attributed_by": source, "trajectories": len(rows), "exact": num((diff == 0).mean()),
            "within_1": num((diff <= 1).mean()), "within_3": num((diff <= 3).mean()),
            "mean_abs_diff": num(diff.mean()), "median_abs_diff": num(np.median(diff)),
            "with_agent": len(named), "same_agent": num(np.mean([s == a for s, a in named])) if named else None,
        })
    return out
