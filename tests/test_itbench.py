"""ITBench SRE agent run folders: imported as units, steps from the Codex session (or the OTLP
logs), the diagnosis as the final step, and ITBench-AA's recall-gated precision as the score."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotator.cli import main
from annotator.importers.base import ImportOptions
from annotator.importers.importing import expand_paths, import_file, import_paths
from annotator.importers.itbench import load_ground_truth, score_diagnosis, submitted_entities
from annotator.models import HIDDEN
from annotator.store.trajectories import get_trajectory

FIXTURE = Path(__file__).parent / "fixtures" / "itbench_run"
RUNS = FIXTURE / "outputs" / "agent_outputs"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
GROUND_TRUTH = SHARED / "itbench_groundtruth"


def _invoke(*args: str):
    """Run the CLI on a console wide enough that no line wraps."""
    return CliRunner(env={"COLUMNS": "400"}).invoke(main, list(args))


def test_score_is_recall_gated_precision():
    truth = ["otel-demo/Deployment/ad", "otel-demo/ResourceQuota/strict-resource-quota"]
    assert score_diagnosis(truth, truth) == (1.0, True, [])
    assert score_diagnosis([*truth, "otel-demo/Service/ad", "otel-demo/Pod/x"], truth) == (0.5, True, [])
    assert score_diagnosis(["otel-demo/Deployment/AD"], truth) == (0.0, False, [truth[1]])
    assert score_diagnosis([], truth) == (0.0, False, truth)
    assert score_diagnosis(["OTEL-DEMO/deployment/ad", truth[1]], truth) == (1.0, True, [])


def test_only_contributing_entities_are_submitted():
    diagnosis = {"entities": [{"name": "a/B/c", "contributing_factor": True}, {"name": "a/B/d", "contributing_factor": False},
                              {"name": "a/B/e"}, "junk", {"contributing_factor": True}]}
    assert submitted_entities(diagnosis) == ["a/B/c", "a/B/e"]


def test_ground_truth_files_are_indexed_by_scenario_number():
    truths = load_ground_truth(GROUND_TRUTH)
    assert set(truths) == {"1", "3", "102"}
    assert truths["1"].entities == ["otel-demo/ConfigMap/flagd-config"]
    assert truths["102"].entities == ["otel-demo/Deployment/ad", "otel-demo/ResourceQuota/strict-resource-quota"]


def test_a_run_folder_is_one_path():
    # (README.md is walked to be listed as not a trajectory.)
    assert expand_paths([FIXTURE]) == [FIXTURE / "README.md", RUNS / "1" / "1", RUNS / "1" / "2", RUNS / "102" / "1"]
    assert expand_paths([RUNS / "1" / "1"]) == [RUNS / "1" / "1"]


def test_import_scored_against_ground_truth(db):
    summary = import_paths(db, [RUNS], opts=ImportOptions(ground_truth=GROUND_TRUTH))
    assert not summary.failed and [f.format for f in summary.files] == ["itbench_run"] * 3
    t11, t12, t102 = (get_trajectory(db, f.trajectory_ids[0]) for f in summary.files)

    # Incident 1 trial 1: steps from the Codex rollout, not from traces.jsonl; two submitted
    # root causes of which one is the ground truth -> found, precision 0.5.
    assert [s.kind for s in t11.steps] == ["message", "thought", "tool_call", "tool_result", "tool_call",
                                           "tool_result", "message", "final_answer"]
    assert (t11.outcome, t11.score, t11.model) == ("success", 0.5, "gpt-5-codex")
    assert t11.steps[3].attributes["exit_code"] == 0 and t11.steps[3].content.startswith("NAME READY")
    assert (t11.steps[6].tokens_in, t11.steps[6].tokens_out) == (1800, 120)
    assert t11.task == "Diagnose the incident in namespace otel-demo."
    itb = t11.metadata[HIDDEN]["itbench"]
    assert itb == {**itb, "score": 0.5, "success": True, "missing": [], "scenario": "scenario-1"}
    assert t11.metadata["diagnosis"]["entities"][0]["name"] == "otel-demo/ConfigMap/flagd-config"
    assert (t11.metadata["incident_id"], t11.metadata["trial"]) == ("1", "1")
    final = t11.steps[-1]
    assert final.agent == "sre-agent" and "otel-demo/ConfigMap/flagd-config (contributing factor)" in final.content
    assert "otel-demo/ConfigMap/flagd-config -> otel-demo/Deployment/load-generator" in final.content

    # Trial 2: only traces.jsonl; blames the victim -> the root cause is missing, score 0.
    assert [s.kind for s in t12.steps] == ["message", "event", "tool_call", "tool_result", "tool_call",
                                           "tool_result", "final_answer"]
    assert (t12.outcome, t12.score) == ("failure", 0.0)
    assert t12.metadata[HIDDEN]["itbench"]["missing"] == ["otel-demo/ConfigMap/flagd-config"]
    assert t12.steps[2].tool_name == "shell" and t12.steps[3].link == 2
    assert t12.steps[1].content == "tool decision: shell approved (config)"

    # Incident 102: diagnosis only, both root causes found.
    assert [s.kind for s in t102.steps] == ["system", "final_answer"]
    assert (t102.outcome, t102.score, t102.benchmark) == ("success", 1.0, "ITBench-SRE")
    assert summary.files[2].warnings == ["no Codex session rollout or traces/traces.jsonl: only the diagnosis is imported",
                                         "trajectory without a task"]
    assert len({t11.id, t12.id, t102.id}) == 3


def test_without_ground_truth_the_outcome_is_unknown(db):
    result = import_file(db, RUNS / "1" / "1")
    traj = get_trajectory(db, result.trajectory_ids[0])
    assert (traj.outcome, traj.score) == ("unknown", None) and HIDDEN not in traj.metadata


def test_incident_without_ground_truth_is_a_warning(db, tmp_path):
    gt = tmp_path / "gt"
    gt.mkdir()
    shutil.copy(GROUND_TRUTH / "scenario_3.groundtruth.yaml", gt)
    result = import_file(db, RUNS / "102" / "1", opts=ImportOptions(ground_truth=gt))
    assert result.ok and f"no ground truth for incident '102' in {gt}" in result.warnings


def test_broken_diagnosis_fails_the_run_only(db, tmp_path):
    runs = tmp_path / "agent_outputs"
    shutil.copytree(RUNS, runs)
    (runs / "1" / "2" / "agent_output.json").write_text('{"entities": [')
    summary = import_paths(db, [runs])
    assert [f.ok for f in summary.files] == [True, False, True]
    assert "agent_output.json" in summary.files[1].error and "malformed JSON" in summary.files[1].error


def test_cli_imports_a_run_folder_with_ground_truth(tmp_path):
    db = tmp_path / "m.db"
    res = _invoke("--db", str(db), "import", str(FIXTURE), "--ground-truth", str(GROUND_TRUTH))
    assert res.exit_code == 0, res.output
    text = res.output
    assert len(re.findall(r"itbench_run +/\S+/agent_outputs/\d+/\d+: 1 imported", text)) == 3


def test_cli_imports_the_whole_shared_data_folder(tmp_path):
    res = _invoke("--db", str(tmp_path / "m.db"), "import", str(SHARED))
    assert res.exit_code == 0, res.output
    text = res.output
    imported = re.findall(r"^([a-z_]+) +(/\S+?): \d+ imported", text, re.M)
    for fmt, path in imported:
        rel = Path(path).relative_to(SHARED).parts
        assert fmt == (rel[1] if rel[0] == "formats" else fmt), path
    assert {fmt for fmt, _ in imported} >= {
        "claude_code", "codex_cli", "inspect_ai", "mini_swe_agent", "openhands", "openinference", "otel_genai",
        "swe_agent", "who_and_when", "mad_human"}
    # real_world/ holds files of producers still being added; the rest is settled.
    skipped = sorted(Path(path).name for path in re.findall(r"skipped +(/\S+?): not a trajectory", text)
                     if "real_world" not in Path(path).parts)
    docs = [p.name for p in SHARED.rglob("*") if p.name in ("README.md", "SOURCES.md", "LICENSE")
            and "real_world" not in p.parts]  # documentation beside the data is listed, not read
    assert skipped == sorted(["definitions.txt", "examples.txt", "scenario_1.groundtruth.yaml",
                              "scenario_3.groundtruth.yaml", "scenario_102.groundtruth.yaml", *docs])
    assert " 0 failed," in text


@pytest.mark.parametrize("name", ["mast_official_text/definitions.txt", "itbench_groundtruth/scenario_1.groundtruth.yaml"])
def test_an_unknown_file_named_explicitly_still_fails(tmp_path, name):
    res = _invoke("--db", str(tmp_path / "m.db"), "import", str(SHARED / name))
    assert res.exit_code == 1 and "unknown format" in res.output


def test_a_folder_walk_skips_binary_and_foreign_files_but_fails_broken_ones(db, tmp_path):
    (tmp_path / "screenshot.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    (tmp_path / "broken.json").write_text('{"history": [')
    shutil.copy(SHARED / "formats" / "openhands" / "basic.json", tmp_path / "run.json")
    summary = import_paths(db, [tmp_path])
    by_name = {Path(f.path).name: f for f in summary.files}
    assert by_name["screenshot.png"].skipped == by_name["package.json"].skipped == "not a trajectory"
    assert by_name["run.json"].imported == 1
    assert by_name["broken.json"].error and [f.path for f in summary.failed] == [str(tmp_path / "broken.json")]


RETRIED = Path(__file__).parent / "fixtures" / "itbench_retries" / "outputs" / "agent_outputs" / "3" / "1"


def test_a_retried_trial_is_one_trajectory_per_attempt_with_its_own_model(db):
    result = import_file(db, RETRIED, opts=ImportOptions(ground_truth=GROUND_TRUTH))
    assert result.ok and result.format == "itbench_run" and result.imported == 2, result.error
    first, second = (get_trajectory(db, tid) for tid in result.trajectory_ids)
    assert [t.model for t in (first, second)] == ["gpt-oss-120b", "gemini-3-flash-preview"]
    for n, t in enumerate((first, second), start=1):
        assert (t.metadata["incident_id"], t.metadata["trial"], t.metadata["attempt"], t.metadata["attempts"]) == \
            ("3", "1", n, 2)
        assert t.title == f"ITBench incident 3 trial 1 attempt {n} of 2"
        # the dashboard screenshot is a placeholder, not a base64 dump
        assert t.task == "Diagnose the incident in namespace otel-demo. The alert dashboard is attached.\n" \
                         "[image: image/png, 207 bytes]"
    # the first attempt broke off: no diagnosis, no score, pointed at the attempt that has them
    assert (first.outcome, first.score, first.metadata["diagnosis_in_attempt"]) == ("unknown", None, 2)
    assert [s.kind for s in first.steps] == ["message", "tool_call", "tool_result", "error"]
    assert "diagnosis" not in first.metadata and HIDDEN not in first.metadata
    # the second wrote agent_output.json: its final step, its metadata, its score
    assert (second.outcome, second.score) == ("success", 1.0)
    assert second.steps[-1].kind == "final_answer" and "otel-demo/ConfigMap/flagd-config" in second.steps[-1].content
    assert second.metadata["diagnosis"]["entities"][0]["name"] == "otel-demo/ConfigMap/flagd-config"
    assert second.metadata[HIDDEN]["itbench"]["metric"] == "recall-gated precision"
    calls = [(s.tool_name, s.link) for s in second.steps if s.kind == "tool_call"]
    assert [name for name, _ in calls] == ["shell", "apply_patch"] and all(link is not None for _, link in calls)
