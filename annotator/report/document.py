"""`mast report`: assemble every statistic over one label source into a Document.

The header records what a reader needs to regenerate every number: the label source, the
codebook and its version hash, the filters, the counts (and what was left out and why), the
bootstrap seed and replicates, and the tool and library versions.
"""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice
from importlib.metadata import version

import numpy as np
from sqlite_utils import Database

from annotator import __version__
from annotator.errors import ReportError
from annotator.label_sources import SourceKind
from annotator.report import bootstrap, comparisons, cooccurrence, findings, onsets, predictors, prevalence
from annotator.report.audit import audit_section
from annotator.report.frame import FAILED, GROUP_COLUMNS, OUTCOME_NAMES, SUCCEEDED, UNKNOWN, Frame, build
from annotator.report.tables import Document, Rows, Section, Table, num
from annotator.report.threads import one_blas_thread
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

#: Rows of the per-trajectory table shown by the terminal, Markdown and HTML renderings.
DISPLAY_ROWS = 50
#: The logistic regressions of a report: (table name, title, categories left out).
LOGITS = (("logit", "Logistic regression of failure on all modes", ()),
          ("logit_without_fc3", "Logistic regression without FC3 modes", ("FC3",)))


def libraries() -> dict[str, str]:
    return {name: version(name) for name in ("numpy", "scipy", "statsmodels", "scikit-learn")}


def header(kind: str, frame: Frame, sources: list[str], seed: int, replicates: int) -> dict:
    """What a report says about itself."""
    tax = frame.taxonomy
    out = {
        "tool": "mast-annotator",
        "tool_version": __version__,
        "libraries": libraries(),
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "sources": [
            {"name": s, "kind": frame.labels[s].source.kind, "detail": frame.labels[s].source.detail,
             "human": frame.labels[s].source.human,
             "not_finished": dict(frame.labels[s].not_finished),
             "verdicts_outside_codebook": frame.labels[s].outside_codebook}
            for s in sources
        ],
        "taxonomy": {"name": tax.name, "version": tax.version, "version_hash": tax.version_hash},
        "modes": {"reported": list(frame.mode_ids),
                  "not_covered": [m for m in tax.mode_ids if m not in frame.mode_ids]},
        "filters": frame.filters.active(),
        "counts": {
            "trajectories_in_database": frame.n_total,
            "trajectories_counted": frame.n,
            "left_out": dict(frame.excluded),
            "failed": int((frame.failed == FAILED).sum()),
            "succeeded": int((frame.failed == SUCCEEDED).sum()),
            "outcome_unknown": int((frame.failed == UNKNOWN).sum()),
        },
        "seed": seed,
        "bootstrap_replicates": replicates,
    }
    ties = sum(len(frame.labels[s].ties) for s in sources)
    if any(frame.labels[s].source.kind is SourceKind.CONSENSUS for s in sources):
        out["counts"]["consensus_ties"] = ties
    return out


def per_trajectory(frame: Frame, present: np.ndarray, onset: np.ndarray, limit: int | None) -> Table:
    """Modes present in each trajectory with their onsets (``mode@step``).

    The records are :class:`Rows`, made a block of rows at a time as the table is read: over a
    million trajectories the JSON rendering writes each block and lets it go, so the listing
    never exists as a million dicts. A block's text is made from its arrays: each distinct
    (mode, onset) token once, then one join per row.
    """
    shown = frame.n if limit is None else min(limit, frame.n)
    modes = np.asarray(frame.mode_ids, dtype=object)
    systems = np.asarray(frame.levels("system"), dtype=object)
    models = np.asarray(frame.levels("model"), dtype=object)
    outcomes = np.asarray([OUTCOME_NAMES[UNKNOWN], OUTCOME_NAMES[SUCCEEDED], OUTCOME_NAMES[FAILED]],
                          dtype=object)  # by code + 1

    def make(start: int, end: int) -> list[dict]:
        cells = present[start:end]
        counts = cells.sum(axis=1)
        rows, cols = np.nonzero(cells)
        steps = onset[start:end][rows, cols]
        key = (np.nan_to_num(steps, nan=-1).astype(np.int64) + 1) * len(modes) + cols  # 0 + mode: no onset
        distinct, which = np.unique(key, return_inverse=True)
        names = np.asarray([m if s < 0 else f"{m}@{s}" for m, s in zip(
            modes[distinct % len(modes)].tolist(), (distinct // len(modes) - 1).tolist(), strict=True)], dtype=object)
        tokens = iter(names[which.reshape(-1)].tolist())
        listed = [" ".join(islice(tokens, c)) for c in counts.tolist()]
        return [{"trajectory": t, "title": title, "system": system, "model": model, "outcome": outcome,
                 "modes": count, "present": text}
                for t, title, system, model, outcome, count, text in zip(
                    frame.ids[start:end].tolist(), frame.titles[start:end].tolist(),
                    systems[frame.codes("system")[start:end]].tolist(), models[frame.codes("model")[start:end]].tolist(),
                    outcomes[frame.failed[start:end] + 1].tolist(), counts.tolist(), listed, strict=True)]

    return Table("trajectories", "Modes per trajectory (mode@onset step)",
                 ["trajectory", "title", "system", "model", "outcome", "modes", "present"], Rows(shown, make),
                 total_rows=frame.n)


def _mean_modes_columns(counts: np.ndarray, failed: np.ndarray) -> np.ndarray:
    f, s = failed == FAILED, failed == SUCCEEDED
    return np.column_stack([counts * f, f, counts * s, s])


def _mean_modes_interval(sums: np.ndarray, failed: np.ndarray) -> dict:
    lo, hi, _ = bootstrap.interval(np.column_stack([bootstrap.ratio(sums[:, 0], sums[:, 1]),
                                                    bootstrap.ratio(sums[:, 2], sums[:, 3])]))
    lo, hi = bootstrap.withhold_degenerate(lo, hi, np.array([(failed == FAILED).sum(), (failed == SUCCEEDED).sum()]))
    return {"mean_modes_failed_boot_low": num(lo[0]), "mean_modes_failed_boot_high": num(hi[0]),
            "mean_modes_succeeded_boot_low": num(lo[1]), "mean_modes_succeeded_boot_high": num(hi[1])}


def _grouping(frame: Frame, by: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The grouping columns with more than one level, and a line of why for each left out."""
    grouped, why = [], []
    for column in by:
        levels = frame.levels(column)
        if len(levels) > 1:
            grouped.append(column)
        else:
            only = f" ({levels[0]})" if len(levels) else ""
            why.append(f"By {column}: left out, every trajectory has the same {column}{only}.")
    return grouped, why


def _onset_section(db: Database, frame: Frame, present: np.ndarray, onset: np.ndarray) -> Section:
    """Where things break: onsets per mode, where in the run they fall, and against attributions;
    the tables are left out, with a line of why, when the source recorded no onset."""
    on, rel, first = onsets.onset_matrices(frame, present, onset)
    if np.isnan(on).all():
        return Section("Where things break", [], ["Onset tables left out: the source recorded no onset step."])
    histogram = onsets.relative_histogram(rel)
    tables = [
        Table("onsets", "Onset step per mode (absolute, relative to length) and how often it comes first",
              ["mode", "present", "with_onset", "onset_mean", "onset_median", "onset_q1", "onset_q3",
               "relative_mean", "relative_median", "comes_first", "comes_first_share"],
              onsets.onset_records(frame, present, on, rel, first)),
        Table("onset_histogram", "Onsets by position in the run (all modes)", ["from", "to", "onsets"], histogram,
              [f"Bins from {histogram[-1]['to']} on hold no onset and are left out."] if histogram[-1]["to"] < 1 else []),
    ]
    attributed = onsets.against_attributions(db, frame, first)
    if attributed:
        tables.append(Table(
            "attributions", "First onset against decisive-error attributions (the step and agent blamed)",
            ["attributed_by", "attributed", "step_n", "step_accuracy", "step_accuracy_ci_low",
             "step_accuracy_ci_high", "agent_n", "agent_accuracy", "agent_accuracy_ci_low", "agent_accuracy_ci_high",
             "trajectories", "exact", "within_1", "within_3", "mean_abs_diff", "median_abs_diff", "with_agent",
             "same_agent"], attributed,
            ["Step and agent accuracy as Who&When scores attribution (Zhang et al., ICML 2025): the earliest onset"
             " over all modes present is the predicted step, its agent the predicted agent; over every attributed"
             " trajectory counted, a trajectory without an onset is a miss; Wilson 95% intervals. Steps compared"
             " as integers, agents as whole names.",
             "exact, within 1 and 3, abs diff, same agent: over the trajectories with an attributed step and an"
             " onset by the source."]))
    return Section("Where things break", tables)


@one_blas_thread
def build_report(
    db: Database,
    source: str,
    taxonomy: Taxonomy,
    filters: TrajectoryFilter | None = None,
    by: tuple[str, ...] = ("system", "model"),
    seed: int = 0,
    replicates: int = 1000,
    row_limit: int | None = DISPLAY_ROWS,
    audit: str | None = None,
    audit_sample: str | None = None,
) -> Document:
    """The full report over one label source, grouped ``by`` columns of GROUP_COLUMNS; with
    ``audit`` (the people who checked a sample of it), also its estimates corrected by
    prediction-powered inference."""
    unknown = [c for c in by if c not in GROUP_COLUMNS]
    if unknown:
        raise ReportError(f"unknown column(s) {', '.join(unknown)} to group by; choose from {', '.join(GROUP_COLUMNS)}")
    frame = build(db, [source], taxonomy, filters)
    lab = frame.labels[source]
    present, known = lab.present, lab.known
    k = len(frame.mode_ids)
    counts = prevalence.modes_per_trajectory(present)
    notes_cells = []
    undecided = int((~known).sum())
    if undecided:
        notes_cells.append(f"{undecided} undecided cells (unreadable verdict, tie or mode not in the set) are"
                           " left out of their mode's denominator and count as absent in modes per trajectory")

    plan = bootstrap.Plan()
    plan.add("gap", predictors.gap_columns(present, known, frame.failed))
    plan.add("mean_modes", _mean_modes_columns(counts, frame.failed))
    group = by[0] if by else "system"
    plan.add("mean_modes_by_group", findings.mean_modes_columns(frame, counts, group))
    grouped, one_level = _grouping(frame, by)
    with plan.start(replicates, seed) as resampling:  # meanwhile, what needs no replicate
        tests = predictors.table_records(frame, present, known)
        fits = [predictors.logistic(frame, present, known, exclude_categories=exclude) for _, _, exclude in LOGITS]
        compared = {c: comparisons.group_vs_rest(frame, present, known, c) for c in grouped}
        together = cooccurrence.cooccurrence(frame, present, known)
        where = _onset_section(db, frame, present, lab.onset)
        replicated = resampling.result()

    sections = [Section("Per trajectory", [per_trajectory(frame, present, lab.onset, row_limit)])]
    if lab.ties:
        shown = lab.ties if row_limit is None else lab.ties[:row_limit]
        sections[0].tables.append(Table(
            "consensus_ties", "Consensus ties: as many people said present as absent (left undecided)",
            ["trajectory", "mode"], [{"trajectory": str(frame.ids[r]), "mode": frame.mode_ids[c]} for r, c in shown],
            total_rows=len(lab.ties)))

    prev_tables = [Table("prevalence", "Prevalence per mode and category (share of trajectories, Wilson 95% CI)",
                         ["mode", "n", "count", "prevalence", "ci_low", "ci_high"],
                         prevalence.overall(frame, present, known), notes_cells)]
    for column in grouped:
        prev_tables.append(Table(f"prevalence_by_{column}", f"Prevalence by {column}",
                                 [column, "mode", "n", "count", "prevalence", "ci_low", "ci_high"],
                                 prevalence.by_group(frame, present, known, column)))
        prev_tables.append(Table(f"homogeneity_by_{column}", f"Does prevalence differ by {column}? (χ² test)",
                                 ["mode", "levels", "chi2", "dof", "p", "min_expected"],
                                 prevalence.homogeneity(frame, present, known, column),
                                 ["Pearson's χ² on the levels × {present, absent} table; unreliable where the"
                                  " smallest expected count is below 5."]))
    prev_tables.append(Table("modes_per_trajectory", "Distinct modes per trajectory",
                             ["modes", "trajectories", "failed", "succeeded"],
                             prevalence.distribution(counts, frame.failed, k),
                             [f"Rows past {int(counts.max())} modes hold no trajectory and are left out."]
                             if len(counts) and counts.max() < k else []))
    means = prevalence.mean_modes(counts, frame.failed)
    if replicates:
        means[0].update(_mean_modes_interval(replicated["mean_modes"], frame.failed))
    mean_cols = ["trajectories", "mean_modes", "failed", "mean_modes_failed", "succeeded", "mean_modes_succeeded"]
    prev_tables.append(Table("mean_modes", "Mean distinct modes per failed and per successful trajectory",
                             mean_cols + ([f"mean_modes_{o}_boot_{b}" for o in ("failed", "succeeded")
                                                       for b in ("low", "high")] if replicates else []), means))
    for column in grouped:
        prev_tables.append(Table(f"mean_modes_by_{column}", f"Mean distinct modes per trajectory by {column}",
                                 [column, *mean_cols],
                                 prevalence.mean_modes(counts, frame.failed, frame, column)))
    sections.append(Section("Prevalence", prev_tables,
                            ["Prevalence is the share of trajectories showing a mode, not the MAST paper's"
                             " share of all flagged failure instances.", *one_level]))

    gaps = predictors.gap_records(frame, present, known, replicated.get("gap"))
    supported, top = findings.strongest_predictor(frame, gaps, tests)
    gap_cols = ["rank", "mode", "failed_n", "prevalence_failed", "succeeded_n", "prevalence_succeeded", "gap_pp",
                "gap_ci_low_pp", "gap_ci_high_pp"] + (["gap_boot_low_pp", "gap_boot_high_pp"] if replicates else [])
    pred_tables = [
        Table("failed_vs_successful", "Failed vs successful: prevalence gap in percentage points (ranked)",
              gap_cols, gaps, [supported.text[0].upper() + supported.text[1:] + f" (named when BH q <"
                               f" {findings.ALPHA} and both groups have at least {findings.MIN_GROUP})",
                               "Gap interval: Newcombe hybrid score; boot: cluster bootstrap over trajectories"
                               f" (undefined where a group has fewer than {bootstrap.MIN_RESAMPLED})."]),
        Table("two_by_two", "Risk ratio P(fail|mode)/P(fail|no mode), odds ratio, Fisher's exact test",
              ["mode", "present_failed", "present_succeeded", "absent_failed", "absent_succeeded", "risk_ratio",
               "rr_ci_low", "rr_ci_high", "odds_ratio", "or_ci_low", "or_ci_high", "fisher_p", "bh_q",
               "mh_odds_ratio", "mh_ci_low", "mh_ci_high"],
              tests,
              ["Odds ratio: sample OR of Table2x2; 0.5 is added to every cell of a table with an empty cell."
               " q: Benjamini-Hochberg over the modes. mh: Mantel-Haenszel odds ratio pooled over systems."]),
    ]
    for (name, title, _), fit in zip(LOGITS, fits, strict=True):
        pred_tables.append(Table(name, f"{title} ({fit.method}, n = {fit.n})",
                                 ["term", "coef", "odds_ratio", "ci_low", "ci_high", "p"], fit.records,
                                 [f"method: {fit.method}", *fit.notes]))
    sections.append(Section("Failed vs successful", pred_tables, [predictors.LEAKAGE_CAVEAT]))

    comp = [Table(f"compare_{c}", f"Each {c} against the rest", [c, "mode", "group_n", "group_prevalence", "rest_n",
                  "rest_prevalence", "diff_pp_group_minus_rest", "diff_ci_low_pp", "diff_ci_high_pp",
                  "ratio_group_over_rest"], compared[c]) for c in grouped]
    sections.append(Section("Comparisons", [t for t in comp if t.records],
                            ["diff = group minus rest in percentage points; ratio = group divided by rest.",
                             *one_level]))
    sections.append(Section("Co-occurrence", [Table("cooccurrence", "Modes together in a trajectory (count, lift)",
                                                    ["mode", "with", "together", "n", "lift"],
                                                    together)]))
    sections.append(where)
    head = header("report", frame, [source], seed, replicates)
    corrected_findings = []
    if audit is not None:
        corrected, head["audit"], corrected_findings = audit_section(db, source, audit, taxonomy, filters, by,
                                                                     audit_sample)
        sections.insert(1, corrected)
    head["strongest_predictor"] = top
    head["by"] = list(by)
    key = [*findings.counts(frame, group), *findings.top_modes(frame, present, known, group),
           *findings.mean_modes(frame, counts, means[0], replicated.get("mean_modes_by_group"), group), supported,
           *corrected_findings]
    return Document("report", head, sections, key)
