"""Assignments: balanced shares with an overlap, stratified by system, kept on a re-run; progress
per person with Cohen's κ on the overlap (checked against scikit-learn on the label vectors)."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from annotator.annotating import queue as work
from annotator.annotating.assignments import AssignmentError, Candidate, assign, person_progress, plan
from annotator.annotating.session import AnnotationSession
from annotator.cli import main
from annotator.store import assignments as store
from annotator.store import open_db
from annotator.store.trajectories import save_trajectory
from annotator.taxonomy import load_taxonomy
from tests.tui.conftest import trajectory


def _counts(pairs):
    return Counter(who for _, who in pairs)


def test_plan_gives_the_overlap_to_two_people_and_balances_the_load():
    candidates = [Candidate(f"t{i:02d}") for i in range(30)]
    pairs = plan(candidates, ["alice", "bob", "carol"], 0.2, seed=3)
    per_traj = Counter(tid for tid, _ in pairs)
    assert sorted(per_traj) == [c.trajectory_id for c in candidates], "every trajectory is given out"
    assert sum(1 for n in per_traj.values() if n == 2) == 6, "20% of 30 go to two people"
    assert all(n in (1, 2) for n in per_traj.values())
    loads = _counts(pairs)
    assert sum(loads.values()) == 36 and max(loads.values()) - min(loads.values()) <= 1
    pairs_of = Counter(tuple(sorted(w for t, w in pairs if t == tid)) for tid, n in per_traj.items() if n == 2)
    assert len(pairs_of) == 3 and max(pairs_of.values()) - min(pairs_of.values()) <= 1, "every pair shares overlap"
    assert plan(candidates, ["alice", "bob", "carol"], 0.2, seed=3) == pairs, "same seed, same plan"


def test_plan_stratified_balances_within_each_system():
    candidates = [Candidate(f"a{i}", "AG2") for i in range(6)] + [Candidate(f"m{i}", "MetaGPT") for i in range(9)]
    pairs = plan(candidates, ["alice", "bob", "carol"], 0.0, seed=0)
    assert _counts([p for p in pairs if p[0].startswith("a")]) == {"alice": 2, "bob": 2, "carol": 2}
    assert _counts([p for p in pairs if p[0].startswith("m")]) == {"alice": 3, "bob": 3, "carol": 3}


def test_plan_refuses_what_cannot_be_done():
    with pytest.raises(AssignmentError, match="at least two"):
        plan([Candidate("t1")], ["alice"], 0.5)
    with pytest.raises(AssignmentError, match="between 0 and 1"):
        plan([Candidate("t1")], ["alice", "bob"], 1.5)


def test_a_rerun_keeps_earlier_assignments_and_tops_up_the_lightest(db):
    for i in range(6):
        save_trajectory(db, trajectory(f"t{i}", n=3))
    assert assign(db, [Candidate(f"t{i}") for i in range(6)], ["alice", "bob"], 0.0) == 6
    first = store.assigned(db)
    for i in range(6, 9):
        save_trajectory(db, trajectory(f"t{i}", n=3))
    added = assign(db, [Candidate(f"t{i}") for i in range(9)], ["alice", "bob", "carol"], 0.0)
    after = store.assigned(db)
    assert added == 3 and all(after[t] == who for t, who in first.items())
    assert [after[f"t{i}"] for i in range(6, 9)] == [["carol"]] * 3, "the newcomer takes the new work"


def test_progress_counts_and_kappa_match_sklearn(db):
    tax = load_taxonomy()
    for i in range(4):
        save_trajectory(db, trajectory(f"t{i}", n=5))
    store.add_assignments(db, [(f"t{i}", w) for i in range(4) for w in ("alice", "bob")])
    tags = {"alice": [("t0", "FM-1.1"), ("t0", "FM-2.3"), ("t1", "FM-1.1")], "bob": [("t0", "FM-1.1"), ("t1", "FM-3.2")]}
    for who, marks in tags.items():
        for tid in ("t0", "t1"):
            s = AnnotationSession(db, tid, who, tax)
            for t, mode in marks:
                if t == tid:
                    s.toggle(mode, 1)
            s.mark_done()
    AnnotationSession(db, "t2", "alice", tax).toggle("FM-1.1", 0)
    p = person_progress(db, "alice", tax.mode_ids)
    assert (p.assigned, p.done, p.in_progress, p.overlap, p.overlap_done, p.kappa_n) == (4, 2, 1, 4, 2, 28)
    a = [int((t, m) in tags["alice"]) for t in ("t0", "t1") for m in tax.mode_ids]
    b = [int((t, m) in tags["bob"]) for t in ("t0", "t1") for m in tax.mode_ids]
    assert p.kappa == pytest.approx(cohen_kappa_score(a, b))


def test_progress_read_in_sql_is_the_label_by_label_count(db):
    """The progress and the overlap's 2×2 table, read in two queries, are what reading every
    shared item's labels gives: three people, items shared by two or three, partners who have not
    finished, verdicts present, absent and changed, time spent."""
    import random

    from annotator.models import Label
    from annotator.store import labels, review

    rng = random.Random(5)
    tax = load_taxonomy()
    people = ["alice", "bob", "carol"]
    for i in range(30):
        save_trajectory(db, trajectory(f"t{i}", n=3))
    store.add_assignments(db, [(f"t{i}", w) for i in range(30) for w in people if rng.random() < 0.6])
    for i in range(30):
        for who in people:
            if rng.random() < 0.7:
                labels.add_labels(db, [Label(trajectory_id=f"t{i}", mode_id=m, annotator=who,
                                             verdict=rng.choice(["present", "absent"]))
                                       for m in rng.sample(tax.mode_ids, 5)])
            status = rng.choice(["done", "done", "in_progress", None])
            if status:
                review.set_review(db, f"t{i}", who, status, add_seconds=rng.random() * 100)
    for who in people:
        mine = store.assigned_to(db, who)
        states = {s.trajectory_id: s for s in review.review_states(db, who) if s.trajectory_id in mine}
        shared = store.co_assigned(db, who)
        cells, both = Counter(), 0
        for tid, others in shared.items():
            partners = [o for o in others if tid in review.finished_by(db, o)]
            if states.get(tid) is None or states[tid].status != "done" or not partners:
                continue
            both += 1
            current = {(lab.annotator, lab.mode_id): lab.verdict == "present" for lab in labels.current_labels(db, tid)}
            for other in partners:
                for mode in tax.mode_ids:
                    cells[current.get((who, mode), False), current.get((other, mode), False)] += 1
        p = person_progress(db, who, tax.mode_ids)
        assert (p.assigned, p.done, p.in_progress, p.overlap, p.overlap_done, p.kappa_n) == (
            len(mine), sum(s.status == "done" for s in states.values()),
            sum(s.status == "in_progress" for s in states.values()), len(shared), both, sum(cells.values()))
        assert p.seconds_spent == pytest.approx(sum(s.seconds_spent for s in states.values()))
        assert dict(store.overlap_cells(db, who, tax.mode_ids)[0]) == {k: v for k, v in cells.items() if v}
        assert both > 0


def test_queue_lists_own_assignments_first_and_only(db):
    for i in range(4):
        save_trajectory(db, trajectory(f"t{i}", n=3))
    store.add_assignments(db, [("t2", "bob"), ("t3", "bob"), ("t3", "alice")])
    assert [r.summary.id for r in work.queue(db, "bob").rows] == ["t2", "t3"]
    assert [r.summary.id for r in work.queue(db, "bob", everything=True).rows] == ["t2", "t3", "t0", "t1"]
    assert work.blind_items(db, "bob") == {"t3"}
    assert [r.summary.id for r in work.queue(db, "dave").rows] == ["t0", "t1", "t2", "t3"], "no assignments: all"


def test_cli_assign_then_progress_json(db_path):
    db = open_db(db_path)
    for i in range(10):
        save_trajectory(db, trajectory(f"t{i}", n=3, system="AG2" if i < 5 else "MetaGPT"))
    db.close()

    def invoke(*args):
        result = CliRunner().invoke(main, ["--db", str(db_path), *args], env={"COLUMNS": "100"})
        assert result.exit_code == 0, result.output
        return result.output

    text = invoke("assign", "--annotators", "alice,bob,carol", "--overlap", "0.2", "--stratify", "system")
    assert "assigned 10 trajectories (2 to two people, 12 assignments); 0 already assigned, kept" in text
    again = invoke("assign", "--annotators", "alice,bob,carol", "--overlap", "0.2")
    assert "assigned 0 trajectories" in again and "10 already assigned, kept" in again
    people = orjson.loads(invoke("progress", "--json"))
    assert [p["annotator"] for p in people] == ["alice", "bob", "carol"]
    assert sum(p["assigned"] for p in people) == 12 and sum(p["overlap"] for p in people) == 4
    assert {"annotator", "assigned", "done", "in_progress", "overlap"} <= set(people[0])
    assert "no overlap" in invoke("progress") or "κ —" in invoke("progress")
