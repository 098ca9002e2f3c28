"""Adjudication end to end: assign -> two people annotate -> progress -> decide the disagreements
-> report, agreement and export with ``-s adjudicated``; undo retracts a decision."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner

from annotator.annotating.adjudication import Adjudication, NothingToDecide, to_adjudicate
from annotator.annotating.session import AnnotationSession
from annotator.cli import main
from annotator.label_sources import ADJUDICATED, SourceKind, parse
from annotator.store import labels, open_db
from annotator.store.trajectories import save_trajectory
from annotator.taxonomy import load_taxonomy
from tests.tui.conftest import trajectory


def _invoke(db_path, *args):
    result = CliRunner().invoke(main, ["--db", str(db_path), *args], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.output


def test_assign_annotate_progress_adjudicate_report(db_path):
    tax = load_taxonomy()
    db = open_db(db_path)
    for i in range(4):
        save_trajectory(db, trajectory(f"t{i}", n=6, outcome="failure" if i % 2 else "success"))
    db.close()
    _invoke(db_path, "assign", "--annotators", "alice,bob", "--overlap", "1")
    db = open_db(db_path)
    marks = {"alice": {"t0": [("FM-1.3", 2)], "t1": [("FM-3.2", 4)]},
             "bob": {"t0": [("FM-1.3", 3), ("FM-2.6", 1)], "t1": [("FM-3.2", 4)]}}
    for who, per in marks.items():
        for tid in ("t0", "t1", "t2", "t3"):
            s = AnnotationSession(db, tid, who, tax)
            for mode, step in per.get(tid, []):
                s.toggle(mode, step)
            s.mark_done()
    people = orjson.loads(_invoke(db_path, "progress", "--json"))
    assert [(p["annotator"], p["done"], p["overlap"]) for p in people] == [("alice", 4, 4), ("bob", 4, 4)]

    assert to_adjudicate(db, "alice", "bob", tax) == ["t0"]
    adj = Adjudication(db, "t0", "carol", "alice", "bob", tax)
    assert [(d.mode_id, d.kind) for d in adj.pending()] == [("FM-1.3", "onset"), ("FM-2.6", "verdict")]
    with pytest.raises(NothingToDecide):
        adj.decide("FM-1.1", "a", "they agree")
    adj.decide("FM-1.3", "b", "the repetition starts at 3")
    adj.decide("FM-2.6", "own", "the action follows the reasoning", verdict="absent")
    decided = adj.decisions()
    assert len(decided) == 14, "the last decision writes the agreed modes too"
    assert (decided["FM-1.3"].verdict, decided["FM-1.3"].onset_step) == ("present", 3)
    assert decided["FM-1.3"].extra == {"decided_by": "carol", "between": ["alice", "bob"], "chose": "b",
                                       "reason": "the repetition starts at 3"}
    assert decided["FM-2.6"].verdict == "absent" and decided["FM-1.1"].extra["chose"] == "agreed"
    adj.undo()
    assert set(adj.decisions()) == {"FM-1.3"}, "undo retracts the last decision and the agreed modes"
    adj.decide("FM-1.3", "a", "on second thought, step 2")  # decided again while FM-2.6 is still open
    assert set(adj.decisions()) == {"FM-1.3"}, "the agreed modes wait for the last open decision"
    adj.decide("FM-2.6", "own", "the action follows the reasoning", verdict="absent")
    db.close()

    assert parse(ADJUDICATED).kind is SourceKind.ADJUDICATED
    report = orjson.loads(_invoke(db_path, "report", "-s", "adjudicated", "--format", "json", "--bootstrap", "0"))
    text = orjson.dumps(report).decode()
    assert "adjudicated" in text
    assert report["header"]["n"] == 1 if "n" in report.get("header", {}) else True
    rows = _invoke(db_path, "export", "-s", "adjudicated").splitlines()
    exported = [orjson.loads(r) for r in rows]
    assert {e["trajectory_id"] for e in exported} == {"t0"} and len(exported) == 14
    _invoke(db_path, "agreement", "-s", "alice,adjudicated", "--bootstrap", "0")
    db = open_db(db_path)
    assert len(labels.current_labels(db, "t0", ADJUDICATED)) == 14
    db.close()
