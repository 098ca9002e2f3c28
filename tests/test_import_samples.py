"""Every real sample imports with the right step count, outcome, agents, attribution and labels.

Who&When expectations come from two independent places: the table in the data folder's
SOURCES.md (hand-checked per file) and the JSON itself; a few numbers are asserted by hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from annotator.importers.importing import import_file
from annotator.models import HIDDEN
from annotator.store.attributions import attributions
from annotator.store.labels import current_labels
from annotator.store.steps import get_step
from annotator.store.trajectories import get_trajectory, list_trajectories

WW_FILES = [f"Hand-Crafted_{i}.json" for i in range(1, 13)] + [f"Algorithm-Generated_{i}.json" for i in range(1, 25)]


def _sources_table(shared_data: Path) -> dict[str, dict]:
    """file -> {steps, mistake_step, mistake_agent, speaker, match} from who_and_when/SOURCES.md."""
    rows = {}
    for line in (shared_data / "who_and_when" / "SOURCES.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 9 and cells[0].startswith("`") and cells[0].endswith(".json`"):
            m = re.match(r"(.+?) \((?:\*\*)?([a-z ]+?)(?:\*\*)?\)$", cells[7])
            rows[cells[0].strip("`")] = {"steps": int(cells[4]), "mistake_step": cells[5].strip('"'),
                                         "mistake_agent": cells[6], "speaker": m[1], "match": m[2]}
    return rows


@pytest.fixture(scope="module")
def ww(tmp_path_factory, request):
    from annotator.store import open_db

    shared = Path(__file__).resolve().parents[2] / "shared" / "data"
    db = open_db(tmp_path_factory.mktemp("ww") / "ww.db")
    results = {name: import_file(db, shared / "who_and_when" / name) for name in WW_FILES}
    yield db, results, _sources_table(shared), shared
    db.close()


def test_sources_table_lists_all_36_files(ww):
    _, _, table, _ = ww
    assert sorted(table) == sorted(WW_FILES)


@pytest.mark.parametrize("name", WW_FILES)
def test_who_and_when_file(ww, name):
    db, results, table, shared = ww
    result, expect = results[name], table[name]
    source = orjson.loads((shared / "who_and_when" / name).read_bytes())
    assert result.ok and result.format == "who_and_when" and result.imported == 1
    traj = get_trajectory(db, result.trajectory_ids[0])
    assert len(traj.steps) == expect["steps"] == len(source["history"])
    assert traj.outcome == "failure"  # every Who&When run failed
    hand = name.startswith("Hand")
    assert traj.system == ("Magentic-One" if hand else "CaptainAgent")
    speakers = {m["role"] if hand else m["name"] for m in source["history"]}
    assert {s.role if hand else s.agent for s in traj.steps} == speakers
    [att] = attributions(db, traj.id)
    assert att.annotator == "who-and-when"
    assert att.step == int(expect["mistake_step"]) and att.step_as_given == expect["mistake_step"]
    assert att.agent == expect["mistake_agent"] == source["mistake_agent"]
    assert att.reason == source["mistake_reason"]
    step = get_step(db, traj.id, att.step)
    assert expect["speaker"] in (step.agent, step.role)
    assert step.content == source["history"][att.step]["content"]
    if expect["match"] in ("exact", "substring"):
        # "Orchestrator" vs "Orchestrator (thought)": the role is parsed, so the agent matches exactly
        assert att.warnings == [] and step.agent == att.agent
    else:
        how = {"case only": "differs only in case from", "different": "is not"}[expect["match"]]
        assert att.warnings == [f"mistake_agent {expect['mistake_agent']!r} {how} the speaker of step {att.step}"
                                f" ({step.agent!r})"]
    hidden = traj.metadata[HIDDEN]
    assert hidden.get("is_correct", hidden.get("is_corrected")) is False
    assert not any(s.content == str(source.get("ground_truth")) for s in traj.steps)


def test_who_and_when_hand_checked(ww):
    db, results, _, _ = ww
    hc1 = get_trajectory(db, results["Hand-Crafted_1.json"].trajectory_ids[0])
    assert len(hc1.steps) == 29
    assert hc1.steps[0].agent == "human"
    assert (hc1.steps[12].agent, hc1.steps[12].kind) == ("WebSurfer", "message")
    ag14 = results["Algorithm-Generated_14.json"].trajectory_ids[0]
    [att] = attributions(db, ag14)
    assert (att.step, att.agent) == (2, "Culinary_Awards_Expert")
    step = get_step(db, ag14, 2)
    assert (step.agent, step.kind) == ("Computer_terminal", "tool_result")
    hc6 = get_trajectory(db, results["Hand-Crafted_6.json"].trajectory_ids[0])
    assert (hc6.steps[5].agent, hc6.steps[5].role, hc6.steps[5].kind) == ("Orchestrator", "Orchestrator (thought)",
                                                                          "thought")
    # roles: human, Orchestrator (thought), Orchestrator (-> WebSurfer), WebSurfer
    assert {(s.agent, s.recipient, s.kind) for s in hc1.steps} == {
        ("human", None, "message"), ("Orchestrator", None, "thought"), ("Orchestrator", "WebSurfer", "message"),
        ("WebSurfer", None, "message")}


AG_FILES = [n for n in WW_FILES if n.startswith("Algorithm-Generated")]


def test_who_and_when_code_executions_are_calls_linked_to_their_output(ww):
    """Computer_terminal's "exitcode: ..." output answers the code blocks of the message before
    it; "There is no code ..." ran nothing; no result of the 24 AG2 runs is left unlinked."""
    db, results, _, _ = ww
    outputs = nothing_run = 0
    for name in AG_FILES:
        assert "result_unlinked" not in {k for k, _ in results[name].ledger.warnings}, name
        traj = get_trajectory(db, results[name].trajectory_ids[0])
        for s in traj.steps:
            if s.agent != "Computer_terminal":
                continue
            if s.content.startswith("exitcode:"):
                call = traj.steps[s.link]
                assert s.kind == "tool_result" and call.index == s.index - 1 and call.link == s.index, (name, s.index)
                assert call.kind == "tool_call" and call.tool_name == "code_execution"
                blocks = orjson.loads(call.tool_args)
                assert blocks and all(b["code"] in call.content for b in blocks)
                outputs += 1
            else:
                assert s.kind == "message" and s.content.startswith("There is no code") and s.link is None
                nothing_run += 1
    assert (outputs, nothing_run) == (45, 16)


def test_who_and_when_reimport_is_unchanged(ww):
    db, _, _, shared = ww
    again = import_file(db, shared / "who_and_when" / "Hand-Crafted_4.json")
    assert (again.imported, again.unchanged) == (0, 1)


# ---- MAD human-labelled sample (4 records, three taxonomy versions)

#: record -> (title, steps, outcome, agents, present modes for every annotator, unmapped codes)
MAD_EXPECT = {
    1: ("AG2/GSM-Plus/2 (Round 1)", 10, "success", ["assistant", "mathproxyagent"], {"FM-1.5", "FM-2.5"},
        ["2.1", "2.3", "3.1", "3.4"]),
    2: ("AG2/GSM-Plus/7 (Round 2)", 4, "failure", ["assistant", "mathproxyagent"], {"FM-3.2"},
        ["1.4", "1.6", "2.5"]),
    3: ("MetaGPT/ProgramDev/4 (Round 1)", 5, "unknown", ["SimpleCoder", "SimpleReviewer", "SimpleTester"],
        {"FM-2.6", "FM-1.5", "FM-1.3", "FM-2.1", "FM-2.3", "FM-1.2", "FM-3.3", "FM-3.2"},
        ["2.1", "2.3", "3.1", "3.4"]),
}


@pytest.fixture
def mad(db, shared_data):
    result = import_file(db, shared_data / "mad_human_sample" / "mad_human_sample.json")
    assert result.ok, result.error
    source = orjson.loads((shared_data / "mad_human_sample" / "mad_human_sample.json").read_bytes())
    by_record = {get_trajectory(db, i, with_steps=False).metadata["record"]: i for i in result.trajectory_ids}
    return db, result, source, by_record


def _verdicts(db, traj_id):
    out: dict[str, dict[str, str]] = {}
    for label in current_labels(db, traj_id):
        assert label.provenance == "imported"
        out.setdefault(label.annotator, {})[label.mode_id] = label.verdict
    return out


def test_mad_human_counts(mad):
    db, result, _, by_record = mad
    assert (result.format, result.imported, result.labels) == ("mad_human", 4, 13 * 3 + 13 * 3 + 13 * 3 + 14 * 3)
    assert sorted(by_record) == [1, 2, 3, 4]
    assert sum(kind == "label" for kind, _ in result.ledger.warnings) == 4 + 3 + 4  # one per unmapped code


@pytest.mark.parametrize("record", sorted(MAD_EXPECT))
def test_mad_human_early_rounds(mad, record):
    db, _, source, by_record = mad
    title, n_steps, outcome, agents, present, unmapped = MAD_EXPECT[record]
    [summary] = [t for t in list_trajectories(db) if t.id == by_record[record]]
    assert (summary.title, summary.n_steps, summary.outcome, summary.agents) == (title, n_steps, outcome, agents)
    verdicts = _verdicts(db, by_record[record])
    assert sorted(verdicts) == ["mad-human-1", "mad-human-2", "mad-human-3"]
    for per_mode in verdicts.values():  # all three annotators agree on every row of these records
        assert len(per_mode) == 13 and "FM-1.4" not in per_mode
        assert {m for m, v in per_mode.items() if v == "present"} == present
    traj = get_trajectory(db, by_record[record])
    assert [u["code"] for u in traj.metadata[HIDDEN]["unmapped_codes"]] == unmapped
    assert len(source[record - 1]["annotations"]) == (18 if "Round 1" in title else 17)


def test_mad_human_final_round_per_annotator(mad):
    db, _, source, by_record = mad
    rec = source[3]
    verdicts = _verdicts(db, by_record[4])
    for n in (1, 2, 3):
        expected = {}
        for row in rec["annotations"]:
            code = row["failure mode"].split()[0]
            expected[f"FM-{code}"] = "present" if row[f"annotator_{n}"] else "absent"
        assert verdicts[f"mad-human-{n}"] == expected
    majority = {m for m in verdicts["mad-human-1"]
                if sum(verdicts[f"mad-human-{n}"][m] == "present" for n in (1, 2, 3)) >= 2}
    assert majority == {"FM-1.1", "FM-3.2", "FM-3.3"}
    disagree = {m for m in verdicts["mad-human-1"] if len({verdicts[f"mad-human-{n}"][m] for n in (1, 2, 3)}) > 1}
    assert disagree == {"FM-1.1", "FM-3.2"}
    summary = [t for t in list_trajectories(db) if t.id == by_record[4]][0]
    assert (summary.n_steps, summary.outcome, summary.system, summary.benchmark) == (7, "unknown", "MetaGPT", "MMLU")


def test_mad_metagpt_log_task_is_the_users_requirement(mad):
    """Record 4 is a MetaGPT communication log with no prompt beside it: its task is the CONTENT
    of the Human UserRequirement message, up to the next message."""
    db, _, _, by_record = mad
    traj = get_trajectory(db, by_record[4], with_steps=False)
    assert traj.task.startswith("The following are multiple choice questions (with answers) about high_school")
    assert "NEW MESSAGES" not in traj.task and "Question:" in traj.task


def test_mad_human_hides_notes_and_outcome_from_steps(mad):
    db, _, source, by_record = mad
    for record in (1, 2):
        trace = orjson.loads(source[record - 1]["trace"])
        traj = get_trajectory(db, by_record[record], with_raw=True)
        assert traj.metadata[HIDDEN]["note"] == trace["note"]
        assert traj.metadata[HIDDEN]["other_data"]["correct"] == trace["other_data"]["correct"]
        note = trace["note"]["text"]
        note = " ".join(note) if isinstance(note, list) else note
        assert note.strip() and all(note not in s.content for s in traj.steps)
        assert all('"correct"' not in s.content and "seed_answer" not in s.content for s in traj.steps)
        assert orjson.loads(traj.raw)["trace"] == source[record - 1]["trace"]  # the original is kept whole
        assert [s.agent for s in traj.steps] == [m["name"] for m in trace["trajectory"]]


def test_mad_human_verification_modes_flagged(mad):
    db, _, _, by_record = mad
    flagged = {lab.mode_id for lab in current_labels(db, by_record[2]) if lab.extra.get("verification_ambiguous")}
    assert flagged == {"FM-3.2", "FM-3.3"}
