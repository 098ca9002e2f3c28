"""The rule detectors on crafted trajectories and on the real MAD human sample."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from annotator.errors import StoreError
from annotator.importers.importing import import_paths
from annotator.labelling.rules import (
    RulesLabeller,
    conversation_reset,
    premature_termination,
    step_repetition,
    unaware_of_termination,
)
from annotator.labelling.rules_pool import PooledRules
from annotator.labelling.runner import run_labeller
from annotator.models import LabelRun, Step
from annotator.store.labels import current_labels
from annotator.store.requests import run_items
from annotator.store.runs import create_run, get_run
from annotator.store.synthetic import insert_step_rows, insert_trajectory_rows
from annotator.store.trajectories import get_trajectory, list_trajectories
from annotator.taxonomy import load_taxonomy

TASK = "Write a function that returns the n-th Fibonacci number and test it."


def steps(*items) -> list[Step]:
    out = []
    for i, item in enumerate(items):
        agent, content = item[0], item[1]
        extra = item[2] if len(item) > 2 else {}
        out.append(Step(index=i, agent=agent, content=content, **extra))
    return out


def test_repeated_tool_call_with_same_arguments():
    s = steps(("user", TASK), ("coder", "", {"kind": "tool_call", "tool_name": "run", "tool_args": '{"cmd": "pytest"}'}),
              ("tool", "1 failed", {"kind": "tool_result"}),
              ("coder", "", {"kind": "tool_call", "tool_name": "run", "tool_args": '{"cmd":  "pytest"}'}))
    hit = step_repetition(s, TASK)
    assert hit is not None and hit.steps == [3]


def test_near_duplicate_message_of_the_same_agent_but_not_of_another():
    msg = "I have reviewed the code and everything looks correct to me, approving the change."
    assert step_repetition(steps(("user", TASK), ("reviewer", msg), ("coder", "ok"), ("reviewer", msg + "!")), TASK)
    assert step_repetition(steps(("user", TASK), ("reviewer", msg), ("coder", msg)), TASK) is None
    assert step_repetition(steps(("user", TASK), ("a", "ok"), ("a", "ok")), TASK) is None  # too short to count


def test_continuing_after_termination_and_nudge_loops():
    s = steps(("user", TASK), ("coder", "def fib(n): ... TERMINATE"), ("reviewer", "One more thing."), ("coder", "Sure."))
    hit = unaware_of_termination(s, TASK)
    assert hit is not None and hit.steps[0] == 1
    assert unaware_of_termination(steps(("user", TASK), ("coder", "Done. TERMINATE")), TASK) is None
    nudge = "Continue. Please keep solving the problem."
    loop = steps(("user", TASK), ("a", "I need more data."), ("proxy", nudge), ("a", "Still stuck."),
                 ("proxy", nudge), ("a", "Cannot."), ("proxy", nudge))
    assert unaware_of_termination(loop, TASK).steps == [4, 6]
    limit = steps(("user", TASK), ("a", "working"), ("system", "Stopped: reached the maximum number of turns (20)."))
    assert unaware_of_termination(limit, TASK).steps == [2]


def test_task_restated_mid_run_is_a_reset():
    s = steps(("user", TASK), ("coder", "def fib(n): return n"), ("planner", "Let us start over."),
              ("planner", TASK.replace("test it", "test it.")))
    hit = conversation_reset(s, TASK)
    assert hit is not None and hit.steps == [3]
    assert conversation_reset(steps(("user", TASK), ("coder", "def fib(n): ..."), ("coder", "tests pass")), TASK) is None


def test_premature_termination_on_dangling_call_or_error():
    dangling = steps(("user", TASK), ("coder", "", {"kind": "tool_call", "tool_name": "run", "tool_args": "{}"}))
    assert premature_termination(dangling, TASK).steps == [1]
    assert premature_termination(steps(("user", TASK), ("coder", "boom", {"kind": "error"})), TASK).steps == [1]
    assert premature_termination(steps(("user", TASK), ("coder", "Here it is.")), TASK) is None


def test_labeller_cites_steps_and_quotes_the_onset(db):
    msg = "Running the full test-suite again to make sure nothing is broken."
    from annotator.models import Trajectory

    t = Trajectory(id="x", source_format="test", task=TASK, content_hash="x",
                   steps=steps(("user", TASK), ("coder", msg), ("tool", "ok"), ("coder", msg)))
    by = {v.mode_id: v for v in RulesLabeller().verdicts(t, load_taxonomy())}
    assert set(by) == {"FM-1.3", "FM-1.5", "FM-2.1", "FM-3.1"}
    assert by["FM-1.3"].verdict == "present" and by["FM-1.3"].onset_step == 3 and by["FM-1.3"].quote == msg
    assert by["FM-1.3"].grounded is True
    assert by["FM-3.1"].verdict == "absent"


def test_on_the_real_mad_human_sample(db, shared_data):
    assert not import_paths(db, [shared_data / "mad_human_sample"]).failed
    tax = load_taxonomy()
    found = {}
    for summary in list_trajectories(db):
        t = get_trajectory(db, summary.id)
        found[summary.title] = {v.mode_id: v for v in RulesLabeller().verdicts(t, tax) if v.verdict == "present"}
    ag2 = next(v for title, v in found.items() if title.startswith("AG2/GSM-Plus/2"))
    # the math proxy keeps sending the same "Continue." prompt: the humans call it FM-1.5
    assert "FM-1.5" in ag2 and len(ag2["FM-1.5"].evidence_steps) >= 2
    assert not any("FM-3.1" in v for v in found.values())


def test_who_and_when_output_is_pinned(db, shared_data):
    """Every hit on the 36 real Who&When runs (onset, cited steps, reason), as the detectors gave
    them before their speed-ups: a faster detector must find exactly the same, whether it reads
    a trajectory's steps from the model or pages them from the store."""
    assert not import_paths(db, [shared_data / "who_and_when"]).failed
    pinned = json.loads((Path(__file__).parents[1] / "fixtures" / "rules_who_and_when.json").read_text())
    tax = load_taxonomy()
    for labeller in (RulesLabeller(), RulesLabeller(db=db)):
        found = {}
        for summary in list_trajectories(db):
            t = get_trajectory(db, summary.id)
            found[Path(t.source_path).name] = {
                v.mode_id: {"onset": v.onset_step, "evidence": v.evidence_steps, "rationale": v.rationale}
                for v in labeller.verdicts(t, tax) if v.verdict == "present"
            }
        assert found == pinned
    assert sum("FM-1.5" in v for v in pinned.values()) == 16 and sum("FM-1.3" in v for v in pinned.values()) == 13


@pytest.mark.parametrize("split_steps", [50_000, 1])
def test_worker_processes_store_what_one_process_finds(db, shared_data, split_steps):
    """The runner over two worker processes stores, for every Who&When run, the verdicts the
    detectors give in one process, whether a trajectory is one worker's or split over both;
    closing the labeller ends the workers."""
    assert not import_paths(db, [shared_data / "who_and_when"]).failed
    tax = load_taxonomy()
    ids = [t.id for t in list_trajectories(db)]
    others = set(multiprocessing.active_children())
    with PooledRules(db, workers=2, split_steps=split_steps) as pooled:
        run = asyncio.run(run_labeller(db, pooled, tax, create_run(db, LabelRun(kind="rules")), ids))
        workers = [p for p in multiprocessing.active_children() if p not in others]
        assert len(workers) == 2
    assert run.status == "completed" and not any(p.is_alive() for p in workers)
    fields = ("mode_id", "verdict", "onset_step", "evidence_steps", "quote", "rationale", "grounded")
    for tid in ids:
        stored = [tuple(getattr(lab, f) for f in fields) for lab in current_labels(db, tid, run.annotator)]
        expected = [tuple(getattr(v, f) for f in fields) for v in RulesLabeller().verdicts(get_trajectory(db, tid), tax)]
        assert sorted(stored) == sorted(expected)


def _rules_run_under_way(db, db_path, n: int, *args: str) -> tuple[subprocess.Popen, list[psutil.Process]]:
    """``mast prelabel --labeller rules`` over ``n`` trajectories of 300 steps, in a process group
    of its own, once it has stored a trajectory; with its worker processes (the fork server's
    children)."""
    step = ("agent", "assistant", "message", "Let us solve this step by step. " * 40)
    insert_trajectory_rows(db, ({"id": f"t{i:03d}", "schema_version": 1, "source_format": "test", "task": TASK,
                                 "content_hash": f"t{i:03d}", "imported_at": "2026-01-01T00:00:00+00:00"}
                                for i in range(n)))
    for i in range(n):
        insert_step_rows(db, f"t{i:03d}", ((j, *step) for j in range(300)))
    proc = subprocess.Popen([sys.executable, "-m", "annotator.cli", "--db", str(db_path), "prelabel", "--labeller",
                             "rules", "-q", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    end = time.monotonic() + 60
    while not db.execute("SELECT count(*) FROM run_items WHERE status = 'done'").fetchone()[0]:
        assert time.monotonic() < end, "no trajectory labelled"
        time.sleep(0.05)
    servers = [p for p in psutil.Process(proc.pid).children() if "forkserver" in " ".join(p.cmdline())]
    workers = [w for s in servers for w in s.children()]
    assert len(workers) == 2
    return proc, workers


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_group_stops_a_pooled_rules_run_and_its_workers(db, db_path, shared_data, sig):
    """Ctrl-C (or a SIGTERM) reaches the whole process group, workers too, which leave stopping to
    the runner: the run ends interrupted, with every trajectory it stored labelled whole, and no
    worker outlives the CLI; multiprocessing's fork server and resource tracker end on their own
    as the CLI's end closes their pipe."""
    proc, workers = _rules_run_under_way(db, db_path, 400)
    os.killpg(proc.pid, sig)
    _, stderr = proc.communicate(timeout=60)
    assert not [w for w in workers if psutil.pid_exists(w.pid)]  # reaped before the CLI exits
    assert proc.returncode == 128 + sig
    assert stderr.strip().splitlines() == ["interrupted: resume with `mast prelabel --resume 1`"]
    assert get_run(db, 1).status == "interrupted"
    done = {i.trajectory_id for i in run_items(db, 1, "done")}
    assert 0 < len(done) < 400 and all(len(current_labels(db, t, "run:1")) == 4 for t in done)
    helpers = [p for p in psutil.process_iter(["cmdline", "status"]) if _group(p) == proc.pid]
    # each is multiprocessing's, or already ending (a zombie, or exiting: its command line is gone)
    assert all(p.info["status"] == psutil.STATUS_ZOMBIE or not p.info["cmdline"]
               or "multiprocessing" in " ".join(p.info["cmdline"]) for p in helpers), [p.info for p in helpers]
    _, alive = psutil.wait_procs(helpers, timeout=30)
    assert not alive
    with pytest.raises(ProcessLookupError):  # nobody is left in the run's process group
        os.killpg(proc.pid, 0)


def _group(p: psutil.Process) -> int | None:
    try:
        return os.getpgid(p.pid)
    except ProcessLookupError:
        return None


def test_a_killed_worker_ends_the_run_in_one_line_and_it_resumes(db, db_path, shared_data):
    """A worker killed outright (the OOM killer's SIGKILL) ends the run as interrupted, with one
    line that says how to resume and no traceback; the resumed run labels the rest."""
    proc, workers = _rules_run_under_way(db, db_path, 200)
    workers[0].kill()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert stderr.strip().splitlines() == ["error: a rules worker process ended unexpectedly (killed, or out of"
                                           " memory); resume with `mast prelabel --resume 1`"]
    assert get_run(db, 1).status == "interrupted"
    resumed = subprocess.run([sys.executable, "-m", "annotator.cli", "--db", str(db_path), "prelabel", "--resume", "1",
                              "-q"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert get_run(db, 1).status == "completed"
    assert len(run_items(db, 1, "done")) == 200
    assert all(len(current_labels(db, f"t{i:03d}", "run:1")) == 4 for i in range(200))


def test_workers_end_when_the_runner_is_killed(db, db_path, shared_data):
    """A runner killed outright (SIGKILL: no chance to end its workers) leaves none behind: each
    worker ends when the runner's end of its parent pipe closes."""
    proc, workers = _rules_run_under_way(db, db_path, 400)
    proc.kill()
    proc.communicate(timeout=60)
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive


def test_a_worker_ending_under_cancelled_trajectories_raises_nothing_in_the_pools_threads(db, monkeypatch):
    """An interrupted run cancels the trajectories still waiting for a worker, then ends the
    workers. When a worker has ended first (killed, out of memory), the pool's manager thread
    fails every future it still holds: none may have been cancelled under it, or that thread
    dies on ``InvalidStateError`` with a traceback on stderr after "interrupted"."""
    step = ("agent", "assistant", "message", "Let us solve this step by step. " * 40)
    insert_trajectory_rows(db, ({"id": f"t{i:03d}", "schema_version": 1, "source_format": "test", "task": TASK,
                                 "content_hash": f"t{i:03d}", "imported_at": "2026-01-01T00:00:00+00:00"}
                                for i in range(20)))
    for i in range(20):
        insert_step_rows(db, f"t{i:03d}", ((j, *step) for j in range(300)))
    tax = load_taxonomy()
    trajectories = [get_trajectory(db, t.id) for t in list_trajectories(db)]
    failed_threads = []
    monkeypatch.setattr(threading, "excepthook", failed_threads.append)

    async def interrupted(pooled: PooledRules) -> None:
        others = set(multiprocessing.active_children())
        tasks = [asyncio.ensure_future(pooled.label(t, tax)) for t in trajectories]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        await asyncio.wait(tasks)
        next(p for p in multiprocessing.active_children() if p not in others).kill()
        await asyncio.sleep(1)  # the manager thread finds the pool broken
        pooled.close()

    with PooledRules(db, workers=2) as pooled:
        asyncio.run(interrupted(pooled))
    assert failed_threads == []


def test_a_worker_that_cannot_open_the_database_fails_the_run_in_one_line(db, shared_data, tmp_path, capfd):
    """A database the workers cannot read is the run's failure, as the StoreError that says so,
    not the pool's "Exception in initializer" traceback and a broken pool."""
    assert not import_paths(db, [shared_data / "who_and_when"]).failed
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(b"not a database" * 100)
    with PooledRules(db, workers=2) as pooled:
        pooled.path = str(damaged)  # what the workers open
        run = create_run(db, LabelRun(kind="rules"))
        with pytest.raises(StoreError, match="not an SQLite database"):
            asyncio.run(run_labeller(db, pooled, load_taxonomy(), run, [t.id for t in list_trajectories(db)]))
    assert get_run(db, run.id).status == "failed"
    assert "Traceback" not in capfd.readouterr().err
