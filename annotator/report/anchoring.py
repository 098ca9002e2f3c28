"""Automation bias: do people agree with a judge more when they see its suggestions?

A suggestion anchors the person who reads it, so agreement between people and a judge measured
on reviews that showed the judge's suggestions overstates how good the judge is. Every review
records whether it was made blind (migration 008); on the trajectories the judge labelled, this
compares each person's agreement with the judge (share of (trajectory × mode) cells both
decided on which they give the same verdict) on blind reviews and on reviews that saw the
suggestions, as the difference in percentage points with a percentile bootstrap interval over
reviews (the project's seeded bootstrap), and counts per person what became of the suggestions
they saw: accepted unchanged, accepted and then edited, rejected, left undecided. Reviews
recorded before blind work was kept are counted apart and compared with neither.
"""

from __future__ import annotations

import numpy as np
from sqlite_utils import Database

from annotator.report import bootstrap
from annotator.report.frame import build
from annotator.report.tables import Section, Table, num
from annotator.store.review import blind_reviews
from annotator.store.suggestions import seen_suggestions
from annotator.taxonomy import Taxonomy
from annotator.views import TrajectoryFilter

COLUMNS = ["person", "reviews_blind", "reviews_sighted", "reviews_unrecorded", "agreement_blind",
           "agreement_sighted", "diff_pp_sighted_minus_blind", "diff_ci_low_pp", "diff_ci_high_pp"]
SUGGESTION_COLUMNS = ["person", "suggestions_seen", "accepted_unchanged", "accepted_then_edited", "rejected",
                      "undecided", "share_accepted_unchanged"]


def _review_terms(db: Database, judge: str, person: str, taxonomy: Taxonomy,
                  filters: TrajectoryFilter | None) -> tuple[np.ndarray, int]:
    """Per review the person finished on a trajectory the judge finished: (agreeing cells, decided
    cells) counted as blind or sighted, as four columns; and the reviews with no record."""
    frame = build(db, [judge, person], taxonomy, filters)
    j, p = frame.labels[judge], frame.labels[person]
    both = j.known & p.known
    agree = (both & (j.present == p.present)).sum(axis=1)
    cells = both.sum(axis=1)
    flags = {t: b for t, _, b in blind_reviews(db, [person])}
    blind = np.asarray([flags.get(t) for t in frame.ids.tolist()], dtype=object)
    is_blind, is_sighted = blind == True, blind == False  # noqa: E712 (None means not recorded)
    terms = np.column_stack([agree * is_blind, cells * is_blind, agree * is_sighted, cells * is_sighted])
    return terms.astype(float), int((~is_blind & ~is_sighted).sum())


def _row(name: str, terms: np.ndarray, unrecorded: int, replicates: int, seed: int) -> dict:
    total = terms.sum(axis=0)
    blind_share, sighted_share = bootstrap.ratio(total[0:1], total[1:2])[0], bootstrap.ratio(total[2:3], total[3:4])[0]
    lo = hi = None
    rows = terms[:, 1] > 0, terms[:, 3] > 0
    if replicates and min(rows[0].sum(), rows[1].sum()) >= bootstrap.MIN_RESAMPLED:
        # With one blind (or one sighted) review, every replicate redraws it: its share would look certain.
        reps = bootstrap.sums(terms, replicates, seed)
        diff = bootstrap.ratio(reps[:, 2], reps[:, 3]) - bootstrap.ratio(reps[:, 0], reps[:, 1])
        low, high, _ = bootstrap.interval(diff[:, None] * 100)
        lo, hi = num(low[0]), num(high[0])
    return {"person": name, "reviews_blind": int(rows[0].sum()), "reviews_sighted": int(rows[1].sum()),
            "reviews_unrecorded": unrecorded, "agreement_blind": num(blind_share),
            "agreement_sighted": num(sighted_share), "diff_pp_sighted_minus_blind": num((sighted_share - blind_share)
                                                                                       * 100),
            "diff_ci_low_pp": lo, "diff_ci_high_pp": hi}


def _suggestion_row(db: Database, judge: str, person: str) -> dict:
    seen = seen_suggestions(db, judge, person)
    unchanged = sum(1 for _, d, same in seen if d == "accepted" and same)
    edited = sum(1 for _, d, same in seen if d == "accepted" and not same)
    rejected = sum(1 for _, d, _ in seen if d == "rejected")
    return {"person": person, "suggestions_seen": len(seen), "accepted_unchanged": unchanged,
            "accepted_then_edited": edited, "rejected": rejected, "undecided": len(seen) - unchanged - edited - rejected,
            "share_accepted_unchanged": num(unchanged / len(seen)) if seen else None}


def anchoring_section(db: Database, judge: str, people: list[str], taxonomy: Taxonomy, filters: TrajectoryFilter | None,
                      replicates: int, seed: int) -> Section:
    """Agreement with ``judge`` blind vs with its suggestions in view, per person and pooled."""
    per_person = {p: _review_terms(db, judge, p, taxonomy, filters) for p in people}
    rows = [_row(p, terms, unrecorded, replicates, seed) for p, (terms, unrecorded) in per_person.items()]
    if len(people) > 1:
        pooled = np.vstack([t for t, _ in per_person.values()])
        rows.insert(0, _row("all people", pooled, sum(u for _, u in per_person.values()), replicates, seed))
    notes = [f"Agreement: share of (trajectory × mode) cells both {judge} and the person decided on which they give"
             " the same verdict, over the person's finished reviews of trajectories the judge labelled. sighted: the"
             " review was made with the judge's suggestions in view; blind: with `mast annotate --blind`;"
             " unrecorded: made before blind work was recorded (left out).",
             "diff > 0: people agree with the judge more when they see its suggestions (anchoring). Interval:"
             " percentile bootstrap over reviews, the report's seed."]
    return Section(f"Automation bias: agreement with {judge}, blind vs with its suggestions", [
        Table("automation_bias", f"Agreement with {judge} on blind reviews and on reviews that saw its suggestions",
              COLUMNS, rows, notes),
        Table("suggestions_taken", f"What each person did with the suggestions of {judge} they saw",
              SUGGESTION_COLUMNS, [_suggestion_row(db, judge, p) for p in people],
              ["accepted unchanged: the person's label is the suggestion as offered (same verdict and onset);"
               " then edited: accepted, then its onset moved or the mode untagged."]),
    ])
