"""The annotation rules without any UI: tag / move / untag, undo, done, notes, suggestions, compare, queue."""

from __future__ import annotations

import sqlite3

import pytest

from annotator.annotating import queue as work
from annotator.annotating.compare import disagreements
from annotator.annotating.session import AlreadyDecided, AnnotationSession, ModeNotTagged, NothingToUndo
from annotator.models import Label, LabelRun, Step, Trajectory
from annotator.store import labels, review, runs
from annotator.store.suggestions import pending_counts
from annotator.store.trajectories import save_trajectory
from annotator.taxonomy import load_taxonomy

TAX = load_taxonomy()


def _traj(tid: str, system: str = "AG2") -> Trajectory:
    steps = [Step(index=i, agent="A", content=f"word{i} common") for i in range(10)]
    return Trajectory(id=tid, source_format="test", system=system, content_hash=tid, steps=steps)


@pytest.fixture
def session(db):
    save_trajectory(db, _traj("t1"))
    return AnnotationSession(db, "t1", "alice", TAX)


def test_toggle_tags_moves_and_untags(session, db):
    assert session.toggle("FM-1.3", 4).kind == "tagged"
    assert session.labels()["FM-1.3"].onset_step == 4
    assert session.toggle("FM-1.3", 7).kind == "moved"
    assert session.labels()["FM-1.3"].onset_step == 7
    assert session.toggle("FM-1.3", 7).kind == "untagged"
    assert "FM-1.3" not in session.labels()
    assert [lab.verdict for lab in labels.history(db, "t1", "alice")] == ["present", "present", None]
    assert review.get_review(db, "t1", "alice").status == "in_progress"


def test_moving_keeps_evidence_note_and_quote(session):
    session.toggle("FM-2.3", 1)
    session.toggle_evidence("FM-2.3", 5)
    session.set_note("FM-2.3", " drifts off ")
    session.set_quote("FM-2.3", "word1")
    session.toggle("FM-2.3", 3)
    lab = session.labels()["FM-2.3"]
    assert (lab.onset_step, lab.evidence_steps, lab.note, lab.quote) == (3, [5], "drifts off", "word1")
    assert session.toggle_evidence("FM-2.3", 5) is False
    assert session.labels()["FM-2.3"].evidence_steps == []


def test_edits_need_a_tag(session):
    with pytest.raises(ModeNotTagged):
        session.set_note("FM-1.1", "x")


def test_undo_is_multi_level_and_writes_retractions(session, db):
    session.toggle("FM-1.1", 2)
    session.toggle("FM-1.1", 5)
    session.set_note("FM-1.1", "n")
    assert session.undo() == "note on FM-1.1"
    assert session.labels()["FM-1.1"].note is None
    session.undo()
    assert session.labels()["FM-1.1"].onset_step == 2
    session.undo()
    assert session.labels() == {}
    with pytest.raises(NothingToUndo):
        session.undo()
    rows = labels.history(db, "t1", "alice")
    assert len(rows) == 6 and sum(r.retracts is not None for r in rows) == 3


def test_done_records_absent_and_can_be_undone(session, db):
    session.toggle("FM-3.1", 9)
    absent = session.mark_done()
    assert len(absent) == 13 and "FM-3.1" not in absent
    current = session.labels()
    assert current["FM-3.1"].verdict == "present"
    assert {m for m, lab in current.items() if lab.verdict == "absent"} == set(absent)
    assert review.get_review(db, "t1", "alice").status == "done"
    session.undo()
    assert list(session.labels()) == ["FM-3.1"]
    assert review.get_review(db, "t1", "alice").status == "in_progress"


def _suggest(db, grounded=True) -> LabelRun:
    run = runs.create_run(db, LabelRun(kind="llm", model="m"))
    labels.add_label(
        db,
        Label(trajectory_id="t1", mode_id="FM-1.3", annotator=run.annotator, verdict="present", onset_step=2,
              evidence_steps=[6], confidence=0.7, provenance="llm", run_id=run.id, grounded=grounded),
    )
    return run


def test_accepting_a_suggestion_makes_it_the_annotators_label(session, db):
    run = _suggest(db)
    assert pending_counts(db, "alice") == {"t1": 1}
    s = session.suggestion_for("FM-1.3")
    assert s.cited_steps == [2, 6] and s.run.model == "m" and s.decision is None
    session.decide(s, "accepted")
    lab = session.labels()["FM-1.3"]
    assert (lab.provenance, lab.run_id, lab.onset_step) == ("accepted", run.id, 2)
    assert session.suggestion_for("FM-1.3").decision == "accepted"
    assert pending_counts(db, "alice") == {}
    assert session.undo() == "accepted FM-1.3"
    assert "FM-1.3" not in session.labels()
    assert session.suggestion_for("FM-1.3").decision is None, "undo makes the suggestion wait again"
    assert pending_counts(db, "alice") == {"t1": 1}


def test_rejecting_a_suggestion_writes_no_label(session, db):
    _suggest(db, grounded=False)
    s = session.suggestion_for("FM-1.3")
    assert s.label.grounded is False
    session.decide(s, "rejected")
    assert session.labels() == {}
    assert session.suggestions()["FM-1.3"][0].decision == "rejected"
    with pytest.raises(AlreadyDecided):
        session.decide(session.suggestion_for("FM-1.3"), "rejected")
    session.decide(session.suggestion_for("FM-1.3"), "accepted")
    assert session.labels()["FM-1.3"].provenance == "accepted", "a rejection can be changed"


def test_rejecting_an_accepted_suggestion_clears_its_label_and_undo_restores_both(session, db):
    _suggest(db)
    session.decide(session.suggestion_for("FM-1.3"), "accepted")
    session.set_note("FM-1.3", "checked by hand")
    session.decide(session.suggestion_for("FM-1.3"), "rejected")
    assert "FM-1.3" not in session.labels()
    assert session.suggestion_for("FM-1.3").decision == "rejected"
    assert session.undo() == "rejected FM-1.3"
    assert session.labels()["FM-1.3"].note == "checked by hand"
    assert session.suggestion_for("FM-1.3").decision == "accepted"
    session.undo()
    session.undo()
    assert session.labels() == {} and session.suggestion_for("FM-1.3").decision is None
    assert pending_counts(db, "alice") == {"t1": 1}
    kinds = [d for (d,) in db.execute("SELECT decision FROM suggestion_decisions ORDER BY id")]
    assert kinds == ["accepted", "rejected", "accepted", "withdrawn"], "decisions are append-only"


def test_disagreements_between_two_annotators(session, db):
    session.toggle("FM-1.1", 1)
    session.toggle("FM-1.2", 2)
    bob = AnnotationSession(db, "t1", "bob", TAX)
    bob.toggle("FM-1.2", 5)
    bob.toggle("FM-2.1", 3)
    found = {(d.mode_id, d.kind, d.onsets) for d in disagreements(db, "t1", "alice", "bob", TAX)}
    assert found == {("FM-1.1", "verdict", (1, None)), ("FM-1.2", "onset", (2, 5)), ("FM-2.1", "verdict", (None, 3))}
    labels.add_label(db, Label(trajectory_id="t1", mode_id="FM-1.1", annotator="dataset", verdict="present"))
    assert disagreements(db, "t1", "alice", "dataset", TAX)[0].mode_id == "FM-1.2", "no onset: nothing to compare on FM-1.1"


def test_one_read_gives_the_same_labels_suggestions_and_others(session, db):
    _suggest(db)
    session.toggle("FM-1.1", 1)
    AnnotationSession(db, "t1", "bob", TAX).toggle("FM-1.2", 5)
    view = session.view()
    assert view.labels == session.labels() and list(view.labels) == ["FM-1.1"]
    assert view.suggestions == session.suggestions() and list(view.suggestions) == ["FM-1.3"]
    assert view.others == session.others() and list(view.others) == ["FM-1.2"]
    blind = session.view(blind=True)
    assert (blind.labels, blind.suggestions, blind.others) == (session.labels(), {}, {})


def test_queue_pages_count_search_in_any_case_and_find_what_is_unfinished(db):
    """A queue is its first ``limit`` rows in queue order and the number that match; the search
    finds ids and titles in any case (casefold, not ASCII only) and step text; ``unfinished``
    leaves out what the annotator has done."""
    for tid, system in (("a", "AG2"), ("b", "AG2"), ("c", "MetaGPT"), ("d", "MetaGPT")):
        save_trajectory(db, _traj(tid, system).model_copy(update={"title": f"Straße {tid}"}))
    review.set_review(db, "a", "alice", "done")
    page = work.queue(db, "alice", limit=2)
    assert ([r.summary.id for r in page.rows], page.total) == (["a", "b"], 4)
    assert [r.status for r in page.rows] == ["done", "not_started"]
    assert [r.summary.id for r in work.queue(db, "alice", unfinished=True, limit=1).rows] == ["b"]
    assert work.queue(db, "alice", search="STRASSE C").total == 1, "casefold: ß is ss"
    assert work.queue(db, "alice", search="word3", limit=1).total == 4
    assert work.queue(db, "alice", ids=["d", "a"]).total == 2
    # a wide adjudication's disagreements: more ids than SQLite takes parameters in one statement
    many = [f"x{i}" for i in range(db.conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))]
    assert work.queue(db, "alice", ids=[*many, "d"]).total == 1


def test_queue_filters_progress_and_next_unfinished(db):
    for tid, system in (("a", "AG2"), ("b", "AG2"), ("c", "MetaGPT")):
        save_trajectory(db, _traj(tid, system))
    review.set_review(db, "a", "alice", "done")
    rows = work.queue(db, "alice").rows
    assert [r.summary.id for r in rows] == ["a", "b", "c"]
    assert [r.summary.id for r in work.queue(db, "alice", system="MetaGPT").rows] == ["c"]
    assert [r.summary.id for r in work.queue(db, "alice", status="done").rows] == ["a"]
    assert len(work.queue(db, "alice", search="word3").rows) == 3
    assert work.queue(db, "alice", search="absentword") == work.Queue([], 0)
    assert work.next_unfinished(rows).summary.id == "b"
    assert work.next_unfinished(rows, after="b").summary.id == "c"
    assert work.progress(db, "alice") == work.AnnotatorProgress(done=1, in_progress=0, total=3)
    review.set_review(db, "b", "alice", "in_progress")
    review.set_review(db, "c", "bob", "done")
    assert work.progress(db, "alice") == work.AnnotatorProgress(done=1, in_progress=1, total=3)
