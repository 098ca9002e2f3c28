"""Sharing the work of a study: who labels which trajectory, how far each person is, how they agree.

``plan`` gives out trajectories so that a share of them (the overlap) goes to two people, who
label it blind to measure agreement, and the rest to one; every person ends up with as close
to the same load as the numbers allow, within each system when asked (``stratify``). It only
gives out trajectories nobody has yet, counting the earlier assignments in the loads, so a
second ``mast assign`` after an import tops the study up without moving anyone's work.

``team_progress`` is what ``mast progress`` and the queue header show per person: assigned,
done, in progress, time spent, and on the overlap items both people finished, Cohen's κ
between them over every (trajectory, mode) cell, present vs not.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sqlite_utils import Database

from annotator.errors import AnnotatorError
from annotator.store import assignments as store


class AssignmentError(AnnotatorError):
    """Assignments that cannot be made as asked (fewer than two people for an overlap, ...)."""


@dataclass(frozen=True)
class Candidate:
    """A trajectory to give out, with the value it is stratified by (None when not stratified)."""

    trajectory_id: str
    stratum: str | None = None


def plan(
    candidates: Sequence[Candidate],
    annotators: Sequence[str],
    overlap: float,
    *,
    existing: dict[str, list[str]] | None = None,
    seed: int = 0,
) -> list[tuple[str, str]]:
    """(trajectory id, annotator) pairs giving out the candidates nobody has yet.

    Per stratum, ``round(overlap * n)`` of its new trajectories (chosen at random with
    ``seed``) go to two people, the others to one. Each trajectory goes to the people with the
    least work so far in that stratum, then overall (earlier assignments included), then the
    pair that shared fewest overlap items, so that agreement is measured between every pair.
    """
    people = list(dict.fromkeys(a.strip() for a in annotators if a.strip()))
    if not people:
        raise AssignmentError("name at least one annotator")
    if not 0 <= overlap <= 1:
        raise AssignmentError(f"--overlap must be between 0 and 1, not {overlap}")
    if overlap > 0 and len(people) < 2:
        raise AssignmentError("an overlap needs at least two annotators")
    existing = existing or {}
    strata = {c.trajectory_id: c.stratum for c in candidates}
    load: Counter[str] = Counter()
    stratum_load: Counter[tuple[str | None, str]] = Counter()
    pair_load: Counter[tuple[str, str]] = Counter()
    for tid, who in existing.items():
        for w in who:
            load[w] += 1
            stratum_load[strata.get(tid), w] += 1
        for i, a in enumerate(who):
            for b in who[i + 1 :]:
                pair_load[a, b] += 1
    rng = random.Random(seed)
    groups: dict[str | None, list[str]] = {}
    for c in candidates:
        if c.trajectory_id not in existing:
            groups.setdefault(c.stratum, []).append(c.trajectory_id)
    out: list[tuple[str, str]] = []
    for stratum in sorted(groups, key=lambda s: (s is None, s or "")):
        ids = sorted(groups[stratum])
        rng.shuffle(ids)
        doubles = set(ids[: round(overlap * len(ids))])
        for tid in ids:
            def weight(p: str) -> tuple[int, int, str]:
                return (stratum_load[stratum, p], load[p], p)

            ranked = sorted(people, key=weight)
            if tid in doubles:
                first = ranked[0]
                second = min(
                    ranked[1:], key=lambda p: (weight(p)[:2], pair_load[tuple(sorted((first, p)))], p)
                )
                chosen = [first, second]
                pair_load[tuple(sorted(chosen))] += 1
            else:
                chosen = [ranked[0]]
            for p in chosen:
                load[p] += 1
                stratum_load[stratum, p] += 1
                out.append((tid, p))
    return out


def assign(
    db: Database,
    candidates: Sequence[Candidate],
    annotators: Sequence[str],
    overlap: float,
    *,
    seed: int = 0,
) -> int:
    """Plan and store the assignments of the candidates not yet given out; how many rows were added."""
    return store.add_assignments(db, plan(candidates, annotators, overlap, existing=store.assigned(db), seed=seed))


@dataclass(frozen=True)
class PersonProgress:
    """One person's share of the study and how far they are with it."""

    annotator: str
    assigned: int
    done: int
    in_progress: int
    seconds_spent: float
    overlap: int  # of the assigned, how many are also given to someone else
    overlap_done: int  # of those, how many this person and another both finished (κ's trajectories)
    kappa: float | None  # Cohen's κ against the others on those, over (trajectory, mode) cells
    kappa_n: int  # how many (trajectory, mode) cells κ counts

    def as_dict(self) -> dict:
        return {
            "annotator": self.annotator,
            "assigned": self.assigned,
            "done": self.done,
            "in_progress": self.in_progress,
            "seconds_spent": round(self.seconds_spent, 1),
            "overlap": self.overlap,
            "overlap_done": self.overlap_done,
            "kappa": self.kappa,
            "kappa_n": self.kappa_n,
        }


def duration(seconds: float) -> str:
    """Time spent as a person reads it: 45 s, 12 min, 3 h 05."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d}"


def agreement_text(p: PersonProgress) -> str:
    """κ with its n, or why there is none yet."""
    if not p.overlap:
        return "no overlap"
    if p.kappa is None:
        return f"κ — (overlap {p.overlap_done}/{p.overlap} finished by both)"
    return f"κ {p.kappa:.2f} (n={p.kappa_n} cells, {p.overlap_done} trajectories)"


def summary_line(p: PersonProgress) -> str:
    """The one line the queue header gives a person's assignments."""
    return (
        f"assigned {p.assigned}: {p.done} done, {p.in_progress} in progress, {duration(p.seconds_spent)}"
        f" · overlap {p.overlap}, {agreement_text(p)}"
    )


def person_progress(db: Database, annotator: str, mode_ids: Sequence[str]) -> PersonProgress:
    """How far ``annotator`` is with their assignments, and their agreement on the overlap."""
    assigned, done, in_progress, seconds, overlap = store.progress_counts(db, annotator)
    cells, both = store.overlap_cells(db, annotator, mode_ids)
    n = sum(cells.values())
    # imported here, not with the module: the queue (and so the annotation app's start) imports
    # this module, and scikit-learn's import alone took a second
    from annotator.report.agreement import cohen

    kappa = cohen(cells[True, True], cells[True, False], cells[False, True], cells[False, False]) if n else None
    return PersonProgress(
        annotator=annotator,
        assigned=assigned,
        done=done,
        in_progress=in_progress,
        seconds_spent=seconds,
        overlap=overlap,
        overlap_done=both,
        kappa=None if kappa is None or kappa != kappa else kappa,
        kappa_n=n,
    )


def team_progress(db: Database, mode_ids: Sequence[str]) -> list[PersonProgress]:
    """Everyone with assignments, by name."""
    people = sorted({w for who in store.assigned(db).values() for w in who})
    return [person_progress(db, p, mode_ids) for p in people]
