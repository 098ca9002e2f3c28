"""Inspect AI logs import as the annotator must see them: the grader's conversation is not a
step, images are placeholders, and de-duplicated model inputs are resolved (real upstream logs)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import orjson

from annotator.importers.base import ImportOptions
from annotator.importers.registry import registry

FIXTURES = Path(__file__).parent / "fixtures" / "inspect_ai"


def _records(name: str):
    return list(registry()["inspect_ai"].read(FIXTURES / name, ImportOptions()))


def _read(name: str):
    return [rec.trajectory for rec in _records(name)]


def test_model_graded_scorer_conversation_is_not_shown():
    records = _records("model_graded_security-guide.json")
    trajs = [rec.trajectory for rec in records]
    # the scorer span (its begin and end, the grader's model call) and the score event: dropped, named
    assert [rec.ledger.dropped_by["grader"] for rec in records] == [4, 4, 4]
    log = orjson.loads((FIXTURES / "model_graded_security-guide.json").read_bytes())
    assert [t.task for t in trajs] == [s["input"][0]["content"] for s in log["samples"]]
    for traj, sample in zip(trajs, log["samples"], strict=True):
        assert traj.model == "openai/gpt-4o-mini"
        assert (traj.outcome, traj.score) == ("success", 1.0)  # every sample graded "C"
        assert [(s.kind, s.role) for s in traj.steps] == [("system", "system"), ("message", "user"),
                                                         ("message", "assistant")]
        assert traj.steps[-1].content == sample["output"]["choices"][0]["message"]["content"]
        shown = "\n".join(s.content for s in traj.steps)
        assert "GRADE" not in shown and "expert answer" not in shown.lower()


def test_images_are_placeholders_with_type_and_size():
    [traj] = _read("log_images.json")
    log = orjson.loads((FIXTURES / "log_images.json").read_bytes())
    uri = log["samples"][0]["attachments"]["734b3dc396aa9924b5f2a48de42561d2"]
    assert uri.startswith("data:image/png;base64,") and len(uri) == 8550
    assert traj.task == "What is this a picture of?\n[image: image/png, 6.4 kB]"
    assert all("base64" not in s.content for s in traj.steps)
    assert traj.steps[1].content == traj.task


def test_deduplicated_model_inputs_are_resolved_from_the_message_pool():
    [traj] = _read("log_message_deduplication.eval")
    with zipfile.ZipFile(FIXTURES / "log_message_deduplication.eval") as zf:
        sample = orjson.loads(zf.read("samples/0_epoch_1.json"))
    model_events = [e for e in sample["events"] if e["event"] == "model"]
    assert model_events[0]["input"] == [] and model_events[0]["input_refs"]  # the shape under test
    assert traj.task == "Guess the number"
    assert (traj.steps[0].kind, traj.steps[0].role, traj.steps[0].content) == ("message", "user", "Guess the number")
    calls = [s for s in traj.steps if s.kind == "tool_call"]
    assert [(c.tool_name, c.tool_args) for c in calls] == [("bash", '{"cmd":"ls"}')] * 5
    results = [s for s in traj.steps if s.kind == "tool_result"]
    assert [r.link for r in results] == [c.index for c in calls]
    assert traj.steps[-1].content == "done"
