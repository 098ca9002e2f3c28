"""Model round trips: what is dumped (JSON or Python) loads back equal, schema version included."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from annotator.models import (
    SCHEMA_VERSION,
    STEP_KINDS,
    Attribution,
    Label,
    LabelRun,
    ReviewState,
    Step,
    Trajectory,
)

WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _trajectory() -> Trajectory:
    steps = [
        Step(index=0, id="m0", agent="Orchestrator", role="Orchestrator (-> WebSurfer)", recipient="WebSurfer",
             content="Search \x1b[31mred\x1b[0m", timestamp=WHEN, tokens_in=5, attributes={"x": [1, {"y": None}]}),
        Step(index=1, kind="tool_call", tool_name="search", tool_args='{"q": "a"}', call_id="c1", link=2,
             raw={"function": {"name": "search"}}),
        Step(index=2, kind="tool_result", call_id="c1", link=1, parent=0, group="turn 1", content="ok"),
    ]
    return Trajectory(id="t1", source_format="openai_chat", system="AG2", outcome="failure", score=0.5,
                      metadata={"hidden": {"correct": False}}, raw=b"\x00\xffbytes", steps=steps, imported_at=WHEN)


@pytest.mark.parametrize(
    "model",
    [
        _trajectory(),
        Label(trajectory_id="t1", mode_id="FM-1.3", annotator="alice", verdict="present", onset_step=2,
              evidence_steps=[3, 4], quote="again", confidence=0.75, provenance="llm", run_id=3, grounded=True,
              extra={"votes": [1, 0]}, created_at=WHEN),
        ReviewState(trajectory_id="t1", annotator="alice", status="done", seconds_spent=12.5, updated_at=WHEN),
        LabelRun(id=4, kind="llm", model="gpt-4o", endpoint_host="127.0.0.1", params={"temperature": 0},
                 counts={"done": 2}, tokens_in=10, started_at=WHEN),
        Attribution(trajectory_id="t1", annotator="who-and-when", step=3, step_as_given="3", agent="A",
                    warnings=["w"], created_at=WHEN),
    ],
    ids=lambda m: type(m).__name__,
)
def test_round_trip_json_and_python(model):
    cls = type(model)
    assert cls.model_validate_json(model.model_dump_json()) == model
    assert cls.model_validate(model.model_dump()) == model


def test_schema_version_is_persisted():
    data = _trajectory().model_dump(mode="json")
    assert data["schema_version"] == SCHEMA_VERSION == 1
    assert Label.model_validate({"trajectory_id": "t", "mode_id": "FM-1.1", "annotator": "a",
                                 "verdict": None}).schema_version == SCHEMA_VERSION


def test_unknown_fields_and_bad_values_are_refused():
    with pytest.raises(ValidationError):
        Step(index=0, colour="red")
    with pytest.raises(ValidationError):
        Step(index=-1)
    with pytest.raises(ValidationError):
        Step(index=0, kind="dance")
    with pytest.raises(ValidationError):
        Label(trajectory_id="t", mode_id="FM-1.1", annotator="a", verdict="maybe")
    with pytest.raises(ValidationError):
        Label(trajectory_id="t", mode_id="FM-1.1", annotator="a", verdict="present", confidence=1.5)


def test_step_kinds_and_run_annotator():
    assert {"message", "thought", "tool_call", "tool_result", "log", "event"} <= set(STEP_KINDS)
    assert LabelRun(id=7, kind="rules").annotator == "run:7"
