"""`mast agreement`: assemble agreement between two or more label sources into a Document.

Rows are the trajectories every source finished. Tables: per mode over all sources (p_o, PA,
NA, prevalence, mean pairwise κ, Gwet's AC1, Fleiss' κ and α for three or more), every pair per
mode (κ, AC1, PABAK), each source against a reference (precision, recall, F1, κ, next to the
human ceiling: the human–human κ), and onset agreement (exact and within ±k steps) on the
cells both sides marked present. Intervals: percentile cluster bootstrap over trajectories
with the seed in the header; every statistic reads the same replicates.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from sqlite_utils import Database

from annotator.errors import ReportError
from annotator.label_sources import SourceKind
from annotator.report import agreement as ag
from annotator.report import bootstrap
from annotator.report.agreement_terms import ONSET_TOLERANCES, Sums, walk
from annotator.report.anchoring import anchoring_section
from annotator.report.document import header
from annotator.report.frame import Frame, build
from annotator.report.tables import Document, Section, Table, num
from annotator.report.threads import one_blas_thread
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

AC1_NOTE = ("AC1: Gwet's (2008) chance-corrected agreement; its chance term 2π(1 − π) stays small for a rare"
            " mode, so it is given for every mode and reads close to p_o where κ is n/e.")


def _labels(frame: Frame) -> list[str]:
    return [*frame.mode_ids, ag.POOLED]


def _positives(frame: Frame, names: list[str]) -> np.ndarray:
    """Per mode (and pooled): trajectories that at least one of ``names`` marked present."""
    anyp = np.zeros((frame.n, len(frame.mode_ids)), dtype=bool)
    for s in names:
        anyp |= frame.labels[s].present
    per_mode = anyp.sum(axis=0)
    return np.append(per_mode, per_mode.sum())


def _ci(reps: np.ndarray | None, col: int, clusters: np.ndarray | int) -> tuple:
    """The percentile interval of column ``col``; undefined where fewer than
    :data:`annotator.report.bootstrap.MIN_RESAMPLED` trajectories (``clusters``, per column or
    one count) are behind it: every replicate would redraw the same one, a point that is not certainty."""
    if reps is None:
        return None, None
    lo, hi, _ = bootstrap.interval(reps[:, col:col + 1])
    n = np.broadcast_to(np.asarray(clusters), (reps.shape[1],))[col:col + 1]
    lo, hi = bootstrap.withhold_degenerate(lo, hi, n)
    return num(lo[0]), num(hi[0])


def _clusters(frame: Frame, names: list[str]) -> np.ndarray:
    """Per mode (and pooled): the trajectories every one of ``names`` decided, which the bootstrap resamples."""
    both = np.logical_and.reduce([frame.labels[s].known for s in names])
    return np.append(both.sum(axis=0), both.any(axis=1).sum())


def pair_replicates(frame: Frame, pairs: list[tuple[str, str]], replicated: dict) -> dict:
    """Per pair: every 2×2 statistic (κ, AC1, PA, ...) of each bootstrap replicate, per mode and pooled."""
    k = len(frame.mode_ids)
    return {p: ag.agreement_from_counts(*ag.split_counts(replicated[("pair", *p)], k))
            for p in pairs if ("pair", *p) in replicated}


def pair_tables(frame: Frame, pairs: list[tuple[str, str]], totals: dict, reps: dict) -> list[dict]:
    """Per pair and mode (and pooled): n, prevalence, p_o, PA, NA, κ and AC1 with bootstrap CIs, PABAK."""
    k = len(frame.mode_ids)
    out = []
    for s1, s2 in pairs:
        counts = ag.split_counts(totals[("pair", s1, s2)], k)
        point = ag.agreement_from_counts(*counts)
        pair_reps = reps.get((s1, s2))
        positives = _positives(frame, [s1, s2])
        clusters = _clusters(frame, [s1, s2])
        for j, label in enumerate(_labels(frame)):
            a, b, c, d = (float(x[j]) for x in counts)
            kappa = ag.cohen(a, b, c, d)
            prevalence = (2 * a + b + c) / (2 * (a + b + c + d)) if a + b + c + d else np.nan
            estimable = bool(positives[j] >= ag.MIN_POSITIVES)
            lo, hi = _ci(pair_reps["kappa"], j, clusters) if pair_reps and estimable else (None, None)
            ac1_lo, ac1_hi = _ci(pair_reps["ac1"], j, clusters) if pair_reps else (None, None)
            out.append({
                "pair": f"{s1} ~ {s2}", "mode": label, "n": int(point["n"][j]), "positives": int(positives[j]),
                "prevalence": num(prevalence), "p_o": num(point["po"][j]), "pa": num(point["pa"][j]),
                "na": num(point["na"][j]), "kappa": num(kappa) if estimable else None, "kappa_ci_low": lo,
                "kappa_ci_high": hi, "ac1": num(point["ac1"][j]), "ac1_ci_low": ac1_lo, "ac1_ci_high": ac1_hi,
                "pabak": num(point["pabak"][j]), "estimable": estimable,
                "boot_undefined": int(np.isnan(pair_reps["kappa"][:, j]).sum()) if pair_reps else None,
            })
    return out


def multi_table(frame: Frame, names: list[str], replicated: dict, pairs: list[dict], sums: Sums) -> list[dict]:
    """Per mode over all sources: observed agreement, PA, NA, mean pairwise κ, AC1, Fleiss' κ, α.

    AC1 is Gwet's multi-rater AC1 over the units every source decided (for two sources, the
    pair's AC1, which it reduces to). Every estimate is a function of ``sums`` (the terms over
    every trajectory), as each replicate is of the replicated ones.
    """
    k, m = len(frame.mode_ids), len(names)
    positives = _positives(frame, names)
    f_reps = a_reps = g_reps = None
    if "fleiss" in replicated:
        f_reps = ag.fleiss_from_terms(replicated["fleiss"], k, m)
        a_reps = ag.alpha_from_terms(replicated["alpha"], k)
        g_reps = ag.ac1_from_terms(replicated["fleiss"], k, m)
    units, p_sum, _ = ag.with_pooled(sums.fleiss, k, 3)
    fleiss = ag.fleiss_from_terms(sums.fleiss, k, m)
    alpha = ag.alpha_from_terms(sums.alpha, k)
    ac1 = ag.ac1_from_terms(sums.fleiss, k, m)
    present_cells, decided_cells = ag.with_pooled(np.concatenate([sums.ones, sums.decided]), k, 2)
    clusters = _clusters(frame, names)
    out = []
    for j, label in enumerate(_labels(frame)):
        rows = [p for p in pairs if p["mode"] == label]
        estimable = bool(positives[j] >= ag.MIN_POSITIVES)
        kappas = [p["kappa"] for p in rows if p["kappa"] is not None]
        if m >= 3:
            ac1_j = (num(ac1[j]), *_ci(g_reps, j, clusters))
        else:
            ac1_j = (rows[0]["ac1"], rows[0]["ac1_ci_low"], rows[0]["ac1_ci_high"])
        rec = {
            "mode": label, "units": int(units[j]), "positives": int(positives[j]),
            "prevalence": num(present_cells[j] / decided_cells[j]) if decided_cells[j] else None,
            "p_o": num(p_sum[j] / units[j]) if units[j] else None, "pa": _pooled(rows, "pa"),
            "na": _pooled(rows, "na"),
            "mean_pairwise_kappa": num(np.mean(kappas)) if estimable and kappas else None,
            "ac1": ac1_j[0], "ac1_ci_low": ac1_j[1], "ac1_ci_high": ac1_j[2],
            "fleiss_kappa": None, "fleiss_ci_low": None, "fleiss_ci_high": None,
            "alpha": None, "alpha_ci_low": None, "alpha_ci_high": None, "estimable": estimable,
        }
        if m >= 3 and estimable:
            flo, fhi = _ci(f_reps, j, clusters)
            alo, ahi = _ci(a_reps, j, clusters)
            rec.update({"fleiss_kappa": num(fleiss[j]), "fleiss_ci_low": flo, "fleiss_ci_high": fhi,
                        "alpha": num(alpha[j]), "alpha_ci_low": alo, "alpha_ci_high": ahi})
        out.append(rec)
    return out


def _pooled(rows: list[dict], key: str) -> float | None:
    """Mean over pairs of a pairwise agreement measure (None if no pair defines it)."""
    values = [r[key] for r in rows if r[key] is not None]
    return num(np.mean(values)) if values else None


def human_ceiling(frame: Frame, humans: list[str], pairs: list[tuple[str, str]], totals: dict,
                  reps: dict) -> tuple[list[dict], str]:
    """Per mode and pooled: the mean pairwise Cohen's κ among the human sources, with its bootstrap CI.

    This is the ceiling a judge's κ against a human reference is read against: people do not
    agree perfectly either. Needs two human sources; otherwise every row says why it is n/a.
    Returns the per-row values and the note that explains them.
    """
    k = len(frame.mode_ids)
    labels = _labels(frame)
    if len(humans) < 2:
        reason = (f"only one human source ({humans[0]})" if humans else "no human source") + " in the comparison"
        note = (f"human kappa (the human ceiling): n/a, {reason}; it needs two or more of people, consensus and"
                " imported human sets (runs and imported judge sets are not human).")
        return [{"human_kappa": None, "human_kappa_ci_low": None, "human_kappa_ci_high": None,
                 "human_estimable": None, "human_kappa_na": reason} for _ in labels], note
    human_pairs = [p for p in pairs if p[0] in humans and p[1] in humans]
    point = np.mean([ag.kappa_from_counts(*ag.split_counts(totals[("pair", *p)], k)) for p in human_pairs], axis=0)
    mean_reps = np.mean([reps[p]["kappa"] for p in human_pairs], axis=0) if reps else None
    positives = _positives(frame, humans)
    clusters = _clusters(frame, humans)
    out = []
    for j in range(len(labels)):
        estimable = bool(positives[j] >= ag.MIN_POSITIVES)
        lo, hi = _ci(mean_reps, j, clusters) if estimable else (None, None)
        out.append({"human_kappa": num(point[j]) if estimable else None, "human_kappa_ci_low": lo,
                    "human_kappa_ci_high": hi, "human_estimable": estimable, "human_kappa_na": None})
    note = (f"human kappa (the human ceiling): mean Cohen's κ over the {len(human_pairs)} pairs of human sources"
            f" ({', '.join(humans)}) with its bootstrap 95% CI; n/e where they marked fewer than"
            f" {ag.MIN_POSITIVES} trajectories present.")
    return out, note


def reference_table(frame: Frame, reference: str, others: list[str], pairs: list[tuple[str, str]], totals: dict,
                    reps: dict, pair_recs: list[dict], ceiling: list[dict]) -> list[dict]:
    """Each source against the reference: support, κ next to the human ceiling, precision, recall,
    specificity and F1, with bootstrap CIs.

    Uses the pair (reference, source), the reference first: its replicated statistics, and its
    rows of the pair table for n, κ with its interval and estimability (``pair_recs`` holds one
    row per label for each pair, in the order of ``pairs``).
    """
    k = len(frame.mode_ids)
    per_pair = len(_labels(frame))
    out = []
    for s in others:
        ref_reps = reps.get((reference, s))
        at = pairs.index((reference, s)) * per_pair
        counts = ag.split_counts(totals[("pair", reference, s)], k)
        clusters = _clusters(frame, [reference, s])
        for j, label in enumerate(_labels(frame)):
            pair = pair_recs[at + j]
            a, b, c, d = (float(x[j]) for x in counts)
            precision, recall, f1 = ag.reference_scores(a, b, c, d)
            flo, fhi = _ci(ref_reps["pa"], j, clusters) if ref_reps else (None, None)  # F1 is PA
            out.append({
                "source": s, "mode": label, "n": pair["n"], "support": int(a + b), "predicted": int(a + c),
                "kappa": pair["kappa"], "kappa_ci_low": pair["kappa_ci_low"],
                "kappa_ci_high": pair["kappa_ci_high"], **ceiling[j], "precision": num(precision),
                "recall": num(recall),
                "specificity": num(d / (c + d)) if c + d else None, "f1": num(f1), "f1_ci_low": flo,
                "f1_ci_high": fhi, "estimable": pair["estimable"],
            })
    return out


def onset_tables(frame: Frame, pairs: list[tuple[str, str]], cells: dict, onset_totals: dict, tolerance: int,
                 replicated: dict, onset_clusters: dict) -> tuple[list[dict], list[dict]]:
    """Per pair and mode: exact and ±tolerance onset agreement; and the pooled curve over k.

    ``cells`` holds each pair's onset differences per mode
    (:class:`annotator.report.agreement_terms.Walked`), ``onset_totals`` the column sums of its
    :func:`annotator.report.agreement_terms.onset_terms` (cells with both onsets, then those
    within each tolerance), and ``onset_clusters`` the trajectories those cells come from.
    """
    per_mode, curve = [], []
    for s1, s2 in pairs:
        for j, mode in enumerate(frame.mode_ids):
            d = cells[(s1, s2)][j]
            per_mode.append({
                "pair": f"{s1} ~ {s2}", "mode": mode, "both_with_onset": int(len(d)),
                "exact": num((d == 0).mean()) if len(d) else None,
                f"within_{tolerance}": num((d <= tolerance).mean()) if len(d) else None,
                "mean_abs_diff": num(d.mean()) if len(d) else None,
                "median_abs_diff": num(np.median(d)) if len(d) else None,
            })
        sums = onset_totals[(s1, s2)]
        total = sums[0]
        reps = replicated.get(("onset", s1, s2)) if total else None
        for i, t in enumerate(ONSET_TOLERANCES):
            lo = hi = None
            if reps is not None:
                lo, hi = _ci(bootstrap.ratio(reps[:, i + 1], reps[:, 0])[:, None], 0, onset_clusters[(s1, s2)])
            curve.append({"pair": f"{s1} ~ {s2}", "within_steps": t, "cells": int(total),
                          "share": num(sums[i + 1] / total) if total else None, "ci_low": lo, "ci_high": hi})
    return per_mode, curve


@one_blas_thread
def build_agreement(
    db: Database,
    sources: list[str],
    taxonomy: Taxonomy,
    filters: TrajectoryFilter | None = None,
    reference: str | None = None,
    seed: int = 0,
    replicates: int = 1000,
    tolerance: int = 3,
) -> Document:
    """Agreement between two or more label sources over the trajectories all of them finished."""
    sources = list(dict.fromkeys(sources))
    if reference is not None:  # first, so every pair (reference, other) is oriented that way
        sources = [reference, *(s for s in sources if s != reference)]
    if len(sources) < 2:
        raise ReportError("agreement needs at least two label sources (--source a --source b)")
    frame = build(db, sources, taxonomy, filters)
    pairs = list(combinations(sources, 2))
    plan = bootstrap.Plan()
    walked = walk(frame, sources, pairs, plan)
    totals, cells, onset_totals, onset_clusters = walked.totals, walked.cells, walked.onsets, walked.onset_clusters
    replicated = plan.run(replicates, seed)
    if len(sources) >= 3 and walked.complete and replicated:
        k, m = len(frame.mode_ids), len(sources)
        replicated["alpha"] = ag.alpha_sums_from_pairs([replicated[("pair", *p)] for p in pairs], k, m)
        replicated["fleiss"] = ag.fleiss_sums_from_alpha(replicated["alpha"], k, m)
    reps = pair_replicates(frame, pairs, replicated)
    pair_recs = pair_tables(frame, pairs, totals, reps)
    sections = [
        Section("Agreement per mode", [
            Table("agreement", "All sources: observed (p_o), positive (PA) and negative (NA) agreement, κ, AC1, α",
                  ["mode", "units", "positives", "estimable", "prevalence", "p_o", "pa", "na", "mean_pairwise_kappa",
                   "ac1", "ac1_ci_low", "ac1_ci_high", "fleiss_kappa", "fleiss_ci_low", "fleiss_ci_high", "alpha",
                   "alpha_ci_low", "alpha_ci_high"],
                  multi_table(frame, sources, replicated, pair_recs, walked.sums),
                  ["pa, na: mean over pairs of sources.",
                   f"κ and α are not estimable (n/e) for modes with fewer than {ag.MIN_POSITIVES} trajectories"
                   " marked present by any source.",
                   AC1_NOTE + " For three or more sources it is Gwet's multi-rater AC1 over the units all decided.",
                   "Pooled rows treat every (trajectory × mode) cell as a unit; negatives dominate them.",
                   "Fleiss' κ and α are given for three or more sources."]),
            Table("pairs", "Each pair of sources: Cohen's κ (sklearn) and Gwet's AC1 with bootstrap 95% CIs, PABAK",
                  ["pair", "mode", "n", "positives", "estimable", "prevalence", "p_o", "pa", "na", "kappa",
                   "kappa_ci_low", "kappa_ci_high", "boot_undefined", "ac1", "ac1_ci_low", "ac1_ci_high", "pabak"],
                  pair_recs,
                  [AC1_NOTE, "boot_undefined: bootstrap replicates where κ was undefined (left out of the interval)."]),
        ]),
    ]
    if reference is not None:
        others = [s for s in sources if s != reference]
        humans = [s for s in sources if frame.labels[s].source.human]
        ceiling, ceiling_note = human_ceiling(frame, humans, pairs, totals, reps)
        sections.append(Section(f"Against the reference {reference}", [
            Table("reference", f"Each source against {reference}: κ next to the human–human κ (human ceiling),"
                  " precision, recall, specificity, F1",
                  ["source", "mode", "kappa", "kappa_ci_low", "kappa_ci_high", "human_kappa", "human_kappa_ci_low",
                   "human_kappa_ci_high", "n", "support", "predicted", "estimable", "precision", "recall",
                   "specificity", "f1", "f1_ci_low", "f1_ci_high"],
                  reference_table(frame, reference, others, pairs, totals, reps, pair_recs, ceiling),
                  [ceiling_note, "The pooled row is micro-averaged over (trajectory × mode) cells."]),
        ]))
        people = [s for s in others if frame.labels[s].source.kind is SourceKind.PERSON]
        if frame.labels[reference].source.kind is SourceKind.RUN and people:
            sections.append(anchoring_section(db, reference, people, taxonomy, filters, replicates, seed))
    per_mode, curve = onset_tables(frame, pairs, cells, onset_totals, tolerance, replicated,
                                   onset_clusters)
    sections.append(Section("Onset agreement", [
        Table("onsets", f"Onset step agreement where both marked the mode present (exact, within ±{tolerance})",
              ["pair", "mode", "both_with_onset", "exact", f"within_{tolerance}", "mean_abs_diff", "median_abs_diff"],
              per_mode),
        Table("onset_curve", "Share of onsets within ±k steps (all modes)",
              ["pair", "within_steps", "cells", "share", "ci_low", "ci_high"], curve),
    ]))
    head = header("agreement", frame, sources, seed, replicates)
    head["reference"] = reference
    head["onset_tolerance"] = tolerance
    return Document("agreement", head, sections)
