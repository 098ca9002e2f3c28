"""tau2-bench results: a real telecom run of gpt-4o (agent and simulated user) imported as one
trajectory per simulation, with the policy, the user's scenario as the task, both parties' tool
calls linked to their results, the reward hidden, and the shapes the file cannot be refused by name."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from annotator.errors import ImportFailure
from annotator.importers import reading
from annotator.importers.base import ImportOptions
from annotator.importers.registry import detect, registry
from annotator.models import HIDDEN

SAMPLE = Path(__file__).parent / "fixtures" / "tau2_bench" / "telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json"


def _read(path: Path) -> list:
    return list(registry()["tau2_bench"].read(path, ImportOptions()))


def test_each_simulation_is_a_trajectory_with_policy_task_model_and_hidden_reward():
    assert detect(SAMPLE).name == "tau2_bench"
    failed, passed = (r.trajectory for r in _read(SAMPLE))
    assert (failed.outcome, failed.score, passed.outcome, passed.score) == ("failure", 0.0, "success", 1.0)
    assert failed.model == "gpt-4o" and failed.system == "tau2-bench llm_agent"
    assert failed.title == "tau2-bench telecom task [service_issue]lock_sim_card_pin[PERSONA:Hard] trial 0"
    assert failed.steps[0].kind == "system" and failed.steps[0].content.startswith("<main_policy>")
    assert failed.task.startswith("Reason for call: Your phone has been showing 'No Service'")
    assert "Persona: At 64 years old" in failed.task
    assert "reward" not in failed.metadata and failed.metadata[HIDDEN]["reward_info"]["reward"] == 0.0
    assert {"task_evaluation_criteria", "task_initial_state"} <= set(failed.metadata[HIDDEN])
    assert failed.metadata["agent_cost"] == 0.037095 and failed.metadata["run"]["user_info"]["llm"] == "gpt-4o"


def test_agent_and_user_tool_calls_are_named_and_linked():
    _, passed = (r.trajectory for r in _read(SAMPLE))
    calls = [s for s in passed.steps if s.kind == "tool_call"]
    assert [(s.agent, s.tool_name) for s in calls] == [
        ("assistant", "get_customer_by_phone"), ("assistant", "get_details_by_id"),
        ("user", "check_status_bar"), ("user", "toggle_airplane_mode")]
    assert calls[0].tool_args == '{"phone_number":"555-123-2002"}'
    for call in calls:
        result = passed.steps[call.link]
        assert result.kind == "tool_result" and result.link == call.index and result.tool_name == call.tool_name
        assert result.attributes["requestor"] == call.agent
    spoken = next(s for s in passed.steps if s.agent == "user" and s.kind == "message")
    assert (spoken.tokens_in, spoken.tokens_out) == (2238, 33)


def test_the_streamed_read_of_a_large_file_gives_the_same_trajectories(monkeypatch):
    whole = [r.trajectory for r in _read(SAMPLE)]
    monkeypatch.setattr(reading, "WHOLE_JSON_BYTES", 0)
    streamed = [r.trajectory for r in _read(SAMPLE)]
    assert [t.content_hash for t in streamed] == [t.content_hash for t in whole]


def _variant(tmp_path: Path, edit) -> Path:
    data = orjson.loads(SAMPLE.read_bytes())
    edit(data)
    out = tmp_path / "results.json"
    out.write_bytes(orjson.dumps(data))
    return out


def test_a_multi_tool_message_answers_each_call(tmp_path):
    def merge(data):
        sim = data["simulations"][1]
        sim["messages"][5] = {"role": "tool", "tool_messages": [sim["messages"][5]]}
    [_, rec] = _read(_variant(tmp_path, merge))
    result = rec.trajectory.steps[6]
    assert result.id == "messages[5].tool_messages[0]" and result.link == 5 and rec.ledger.read == 20


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: d.pop("simulations"), "voice run's folder"),
    (lambda d: d["simulations"][0].update(messages=[], ticks=[{"tick_id": 0}]), "full-duplex voice"),
    (lambda d: d["simulations"][0].update(messages=["hi"]), "simulations[0].messages[0]"),
    (lambda d: d.update(simulations=[]), "no tau2-bench simulations"),
])
def test_what_is_not_a_readable_simulation_is_one_clear_error(tmp_path, edit, says):
    with pytest.raises(ImportFailure, match=r"results\.json") as err:
        _read(_variant(tmp_path, edit))
    assert says in str(err.value)


def test_a_simulation_without_messages_shows_why_it_ended(tmp_path):
    def crash(data):
        data["simulations"][0].update(messages=[], termination_reason="infrastructure_error", reward_info=None)
    rec = _read(_variant(tmp_path, crash))[0]
    assert [s.kind for s in rec.trajectory.steps] == ["system", "error"]
    assert "infrastructure_error" in rec.trajectory.steps[1].content and rec.trajectory.outcome == "unknown"
