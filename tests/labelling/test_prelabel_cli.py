"""`mast prelabel` from the command line against the local server: dry run, runs, interrupts, resume, batch, key hygiene."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from prelabel_helpers import API_KEY, add

from annotator.cli import main
from annotator.labelling.pricing import price_for
from annotator.store import open_db
from annotator.store.labels import current_labels
from annotator.store.requests import run_items
from annotator.store.runs import get_run
from tests.openai_server import FakeOpenAI

MAST = [sys.executable, "-m", "annotator.cli"]
NORMAL = ["Add two and two.", "Thinking. LOOP again.", "4"]


def seed(db, n: int) -> list[str]:
    return [add(db, f"t{i:03d}", [f"ID:t{i:03d} {NORMAL[0]}", *NORMAL[1:]]) for i in range(n)]


def env(**extra) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    e.update(OPENAI_API_KEY=API_KEY, **extra)
    return e


def invoke(db_path, *args, **env_extra):
    return CliRunner().invoke(main, ["--db", str(db_path), "prelabel", *args], env=env(**env_extra),
                              catch_exceptions=False)


def test_dry_run_counts_requests_and_cost_and_sends_nothing(db, db_path, server):
    seed(db, 5)
    r = invoke(db_path, "--dry-run", "--model", "gpt-4o", "--base-url", server.base_url)
    assert r.exit_code == 0, r.output
    m = re.search(r"(\d+) trajectories, (\d+) requests \((\d+) cached\), ~([\d,]+) input \(~([\d,]+) of them from "
                  r"the provider's prompt cache\) and ~([\d,]+) output tokens, estimated cost ([\d.]+) USD",
                  " ".join(r.output.split()))
    assert m, r.output
    n, req, cached, tin, tcached, tout, cost = m.groups()
    assert (n, req, cached) == ("5", "5", "0")
    tin, tcached, tout = (int(v.replace(",", "")) for v in (tin, tcached, tout))
    # the fixed system message (over 1,024 tokens) is expected from the prompt cache after the first request
    assert tcached > 0 and tcached % 4 == 0 and tcached // 4 >= 1024
    assert float(cost) == pytest.approx(price_for("gpt-4o").cost(tin, tout, tcached), abs=1e-4)
    assert float(cost) < price_for("gpt-4o").cost(tin, tout)
    assert "gpt-4o: 5 requests" in r.output and "$2.5 in, $1.25 cached in, $10 out per million tokens" in r.output
    assert tout == 5 * (40 * 14 + 60)
    assert server.log == []
    unknown = invoke(db_path, "--dry-run", "--model", "my-local-model")
    assert "unknown (model not in the price table" in " ".join(unknown.output.split())
    priced = invoke(db_path, "--dry-run", "--model", "my-local-model", "--price-in", "1", "--price-out", "2")
    assert "estimated cost 0.0" in " ".join(priced.output.split())


def test_a_run_labels_and_a_rerun_sends_nothing(db, db_path, server):
    seed(db, 4)
    first = invoke(db_path, "--model", "gpt-4o-mini", "--base-url", server.base_url, "-q")
    assert first.exit_code == 0, first.output
    assert "run 1 (run:1) completed: 4 labelled, 0 failed, 4 requests sent" in " ".join(first.output.split())
    assert "suggestions: 4 present (0 ungrounded: the quote is not in the cited steps), 52 absent, 0 unknown" in " ".join(
        first.output.split())
    again = invoke(db_path, "--model", "gpt-4o-mini", "-q", OPENAI_BASE_URL=server.base_url)
    assert "0 requests sent, 4 cached" in " ".join(again.output.split())
    assert len(server.chat_requests()) == 4
    run = get_run(db, 1)
    assert run.endpoint_host == "127.0.0.1:" + server.base_url.split(":")[-1].split("/")[0]
    assert run.kind == "llm" and run.prompt_name == "structured" and run.prompt_hash


def test_missing_key_is_one_clear_error(db, db_path, server):
    seed(db, 1)
    r = CliRunner().invoke(main, ["--db", str(db_path), "prelabel", "--model", "m", "--base-url", server.base_url],
                           env={"OPENAI_API_KEY": "", "MY_KEY": ""})
    assert r.exit_code == 1 and "no API key: set OPENAI_API_KEY" in r.output


def _spawn(db_path: Path, *args: str, extra_env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([*MAST, "--db", str(db_path), "prelabel", *args, "-q"], env=env(**(extra_env or {})),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def _interrupt(db_path: Path, srv: FakeOpenAI, sig: int) -> None:
    """Start a run (concurrency 2), send ``sig`` once it has made 3 requests: it exits 128 + sig
    and says how to resume."""
    proc = _spawn(db_path, "--model", "m", "--base-url", srv.base_url, "--concurrency", "2")
    _wait_for(lambda: len(srv.chat_requests()) >= 3)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + sig
    assert "resume with `mast prelabel --resume 1`" in " ".join(err.split())


def test_a_bad_codebook_is_one_clear_error(db, db_path, server, tmp_path):
    seed(db, 1)
    bad = tmp_path / "codebook.yaml"
    bad.write_text("categories: [\n")
    r = invoke(db_path, "--model", "m", "--base-url", server.base_url, "--taxonomy", str(bad))
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert "codebook.yaml" in r.output and "not valid YAML" in r.output


def test_kill_9_then_resume_sends_no_answered_request_twice(db, db_path):
    ids = seed(db, 30)
    with FakeOpenAI(latency=0.25) as srv:
        proc = _spawn(db_path, "--model", "m", "--base-url", srv.base_url, "--concurrency", "3")
        _wait_for(lambda: len(srv.chat_requests()) >= 9)
        proc.kill()  # SIGKILL: no chance to clean up
        proc.wait()
        time.sleep(0.5)  # requests in flight at the kill reach the server's log
        check = open_db(db_path)
        stored_before = {r[0] for r in check.execute("SELECT trajectory_id FROM llm_requests")}
        done_before = {i.trajectory_id for i in run_items(check, 1, "done")}
        assert done_before and done_before <= stored_before and len(stored_before) < 30
        sent_before = len(srv.chat_requests())
        resumed = subprocess.run([*MAST, "--db", str(db_path), "prelabel", "--resume", "1", "-q"], env=env(),
                                 capture_output=True, text=True, timeout=60)
        assert resumed.returncode == 0, resumed.stderr
        second = [e["marker"] for e in srv.chat_requests()[sent_before:]]
    assert not set(second) & stored_before  # nothing answered and stored before the kill was asked again
    assert sorted(second) == sorted(set(ids) - stored_before)  # the rest, each exactly once
    assert get_run(check, 1).status == "completed"
    labels = current_labels(check, annotator="run:1")
    assert len(labels) == 30 * 14 and {lab.trajectory_id for lab in labels} == set(ids)
    assert check.execute("SELECT count(*) FROM labels WHERE annotator = 'run:1'").fetchone()[0] == 30 * 14


def test_ctrl_c_stops_cleanly_as_interrupted_and_resumes(db, db_path):
    seed(db, 20)
    with FakeOpenAI(latency=0.3) as srv:
        _interrupt(db_path, srv, signal.SIGINT)
        check = open_db(db_path)
        assert get_run(check, 1).status == "interrupted"
        done = {i.trajectory_id for i in run_items(check, 1, "done")}
        assert {lab.trajectory_id for lab in current_labels(check, annotator="run:1")} == done
        assert all(len(current_labels(check, t, "run:1")) == 14 for t in done)
        resumed = invoke(db_path, "--resume", "1", "-q")
    assert resumed.exit_code == 0, resumed.output
    run = get_run(check, 1)
    assert run.status == "completed" and run.counts["done"] == 20
    stored = check.execute("SELECT count(*) FROM llm_requests").fetchone()[0]
    assert run.counts["sent"] == stored == 20  # counted over both sessions, like its tokens
    assert "cost unknown" in " ".join(resumed.output.split())  # model "m" has no price: no made-up $0


def test_batch_run_and_resume_by_batch_id(db, db_path):
    seed(db, 3)
    with FakeOpenAI() as srv:
        proc = _spawn(db_path, "--model", "m", "--base-url", srv.base_url, "--batch", "--poll", "30")
        _wait_for(lambda: any(e["path"] == "/v1/batches" for e in srv.log))
        time.sleep(0.5)
        proc.kill()
        proc.wait()
        check = open_db(db_path)
        batch_id = get_run(check, 1).params["batch_id"]
        r = invoke(db_path, "--resume", "1", "--resume-batch", batch_id)
        assert r.exit_code == 0, r.output
        uploads = [e for e in srv.log if e["path"] == "/v1/files"]
    assert len(uploads) == 1  # the batch was not submitted again
    assert srv.chat_requests() == []  # every answer came through the batch
    assert "3 labelled" in " ".join(r.output.split())
    assert len(current_labels(check, annotator="run:1")) == 3 * 14


def test_rules_labeller_from_the_cli(db, db_path):
    seed(db, 2)
    r = CliRunner().invoke(main, ["--db", str(db_path), "prelabel", "--labeller", "rules", "-q"])
    assert r.exit_code == 0, r.output
    assert "run 1 (run:1) completed: 2 labelled" in " ".join(r.output.split())
    assert get_run(db, 1).kind == "rules"


def test_the_api_key_is_never_stored_printed_or_logged(db, db_path, server, tmp_path):
    seed(db, 3)
    add(db, "broken", ["ID:broken", "FAULT:hallucinate"])
    outputs = []
    for args in (["--model", "m", "--base-url", server.base_url],
                 ["--model", "m", "--base-url", server.base_url, "--prompt", "mast-original"],
                 ["--model", "m", "--dry-run"]):
        proc = subprocess.run([*MAST, "--db", str(db_path), "prelabel", *args], env=env(), capture_output=True,
                              text=True, timeout=60)
        outputs += [proc.stdout, proc.stderr]
    for cmd in (["list", "--json"], ["show", "t000"], ["report", "-s", "run:1"],
                ["report", "-s", "run:2", "--format", "html", "-o", str(tmp_path / "report.html")],
                ["report", "-s", "run:1", "--format", "json", "-o", str(tmp_path / "report.json")],
                ["export", "-s", "run:1,run:2", "--format", "jsonl", "-o", str(tmp_path / "labels.jsonl")]):
        proc = subprocess.run([*MAST, "--db", str(db_path), *cmd], env=env(), capture_output=True, text=True)
        outputs += [proc.stdout, proc.stderr]
    assert any(e["authorization"] == f"Bearer {API_KEY}" for e in server.chat_requests())  # it was used
    assert "failed: broken" in " ".join(outputs)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"mast.db", "report.html", "report.json", "labels.jsonl"} <= {p.name for p in files}
    for p in files:
        assert API_KEY.encode() not in p.read_bytes(), p
    assert all(API_KEY not in o for o in outputs)


# ---- spend that adds up, exit codes, messages, secrets


def test_max_cost_holds_for_the_whole_run_across_resumes(db, db_path, server):
    seed(db, 12)
    price = ["--price-in", "100", "--price-out", "100"]  # about $0.2 a request: the cap binds fast
    first = invoke(db_path, "--model", "m", "--base-url", server.base_url, "--max-cost", "1", *price, "-q")
    assert first.exit_code == 0, first.output
    assert "stopped: the next request would exceed --max-cost 1" in " ".join(first.output.split())
    assert 0 < len(server.chat_requests()) < 12
    for _ in range(2):
        again = invoke(db_path, "--resume", "1", "-q")
        assert again.exit_code == 0, again.output
    run = get_run(db, 1)
    stored = db.execute("SELECT count(*), sum(cost_usd), sum(tokens_in) FROM llm_requests WHERE run_id = 1").fetchone()
    assert run.cost_usd <= 1.0 and run.cost_usd == pytest.approx(stored[1])
    assert run.counts["sent"] == stored[0] == len(server.chat_requests()) < 12  # the resumes sent nothing more
    assert run.tokens_in == stored[2]
    refused = invoke(db_path, "--resume", "1", "--model", "other", "--max-cost", "100", "-q")
    assert refused.exit_code == 2 and "--model cannot change" in " ".join(refused.output.split())
    assert len(server.chat_requests()) == stored[0]
    raised = invoke(db_path, "--resume", "1", "--max-cost", "100", "-q")  # a larger budget, for the run's total
    assert raised.exit_code == 0, raised.output
    run = get_run(db, 1)
    assert run.status == "completed" and "stopped" not in run.params and run.params["options"]["max_cost"] == 100
    assert run.counts["done"] == 12 and "stopped" not in raised.output


def test_identical_trajectories_in_flight_together_are_asked_and_paid_once(db, db_path):
    for tid in ("twin-a", "twin-b", "twin-c"):
        add(db, tid, NORMAL)  # the same task and steps: the same request
    with FakeOpenAI(latency=0.3) as srv:  # slow enough that all three are in flight at once
        r = invoke(db_path, "--model", "m", "--base-url", srv.base_url, "--concurrency", "8", "-q")
        assert r.exit_code == 0, r.output
        assert len(srv.chat_requests()) == 1
    run = get_run(db, 1)
    stored = db.execute("SELECT count(*), sum(tokens_in) FROM llm_requests WHERE run_id = 1").fetchone()
    assert run.counts["done"] == 3 and run.counts["sent"] == stored[0] == 1 and run.counts["cached"] == 2
    assert run.tokens_in == stored[1]


def test_two_runs_that_send_the_same_request_at_once_each_count_what_they_paid(db, db_path):
    seed(db, 1)
    with FakeOpenAI(latency=5.0) as srv:  # both ask before either's answer is back
        runs = [_spawn(db_path, "--model", "gpt-4o-mini", "--base-url", srv.base_url) for _ in range(2)]
        for proc in runs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
        assert len(srv.chat_requests()) == 2  # both runs missed the cache and paid for the same request
    check = open_db(db_path)
    assert check.execute("SELECT count(*) FROM llm_requests").fetchone()[0] == 1  # the cache keeps one answer
    price = price_for("gpt-4o-mini")
    for run_id in (1, 2):
        run = get_run(check, run_id)
        paid = check.execute("SELECT count(*), sum(tokens_in), sum(tokens_out), sum(tokens_cached) FROM llm_spend"
                             " WHERE run_id = ?", [run_id]).fetchone()
        assert run.status == "completed" and run.counts["done"] == 1
        assert (run.counts["sent"], run.tokens_in, run.tokens_out) == (1, paid[1], paid[2]) and paid[0] == 1
        assert paid[1] > 0 and run.cost_usd > 0 and run.cost_usd == pytest.approx(price.cost(paid[1], paid[2], paid[3]))


def test_a_killed_session_loses_no_spend_from_the_record(db, db_path):
    seed(db, 30)
    with FakeOpenAI(latency=0.25) as srv:
        proc = _spawn(db_path, "--model", "gpt-4o-mini", "--base-url", srv.base_url, "--concurrency", "3")
        _wait_for(lambda: len(srv.chat_requests()) >= 9)
        proc.kill()
        proc.wait()
        check = open_db(db_path)
        stored = check.execute("SELECT count(*), sum(tokens_in), sum(tokens_out) FROM llm_requests").fetchone()
        resumed = subprocess.run([*MAST, "--db", str(db_path), "prelabel", "--resume", "1", "-q"], env=env(),
                                 capture_output=True, text=True, timeout=60)
        assert resumed.returncode == 0, resumed.stderr
        answered = [e for e in srv.chat_requests() if e["status"] == 200]
    run = get_run(check, 1)
    totals = check.execute("SELECT count(*), sum(tokens_in), sum(tokens_out), sum(tokens_cached) FROM llm_requests"
                           ).fetchone()
    assert stored[0] >= 6  # the killed session had stored answers ...
    assert (run.counts["sent"], run.tokens_in, run.tokens_out) == totals[:3]  # ... and they all count
    # every answered request is in the record but those in flight when the process died (3 at most)
    assert len(answered) - 3 <= run.counts["sent"] <= len(answered)
    assert run.cost_usd == pytest.approx(price_for("gpt-4o-mini").cost(totals[1], totals[2], totals[3]))


def test_sigterm_marks_the_run_interrupted(db, db_path):
    seed(db, 20)
    with FakeOpenAI(latency=0.3) as srv:
        _interrupt(db_path, srv, signal.SIGTERM)
    check = open_db(db_path)
    run = get_run(check, 1)
    assert run.status == "interrupted" and run.finished_at is not None
    assert run.counts["sent"] == check.execute("SELECT count(*) FROM llm_requests").fetchone()[0]


def test_a_run_where_every_request_fails_exits_non_zero_with_the_key_redacted(db, db_path):
    seed(db, 3)
    with FakeOpenAI(reject_key=True) as srv:
        r = invoke(db_path, "--model", "m", "--base-url", srv.base_url, "--allow-failures", "-q")
        assert any(API_KEY in e["authorization"] for e in srv.chat_requests())
    text = " ".join(r.output.split())
    assert r.exit_code == 1, r.output
    assert "0 labelled, 3 failed" in text and "nothing was labelled" in text
    assert "HTTP 401: Incorrect API key provided: [redacted]." in text
    assert API_KEY not in r.output
    errors = [i.error for i in run_items(db, 1, "failed")]
    assert len(errors) == 3 and all("[redacted]" in e and API_KEY not in e for e in errors)
    assert API_KEY.encode() not in db_path.read_bytes()


def test_some_failures_exit_non_zero_unless_allowed(db, db_path, server):
    seed(db, 2)
    add(db, "broken", ["ID:broken", "FAULT:hallucinate"])
    strict = invoke(db_path, "--model", "m", "--base-url", server.base_url, "-q")
    assert strict.exit_code == 1 and "2 labelled, 1 failed" in " ".join(strict.output.split())
    assert "--allow-failures" in strict.output
    allowed = invoke(db_path, "--model", "m2", "--base-url", server.base_url, "--allow-failures", "-q")
    assert allowed.exit_code == 0, allowed.output


def test_a_refused_connection_is_said_and_not_retried(db, db_path):
    import socket

    seed(db, 1)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    r = invoke(db_path, "--model", "m", "--base-url", f"http://127.0.0.1:{port}/v1", "-q")
    took = time.monotonic() - start
    text = " ".join(r.output.split())
    assert r.exit_code == 1
    assert f"connection refused by http://127.0.0.1:{port}/v1" in text and "Timeout" not in text
    assert took < 3.0  # one attempt, not five with backoff (a generous bound, not a timing target)


@pytest.mark.parametrize("url", ["ht!tp://nowhere", "http://[::1"])
def test_a_malformed_url_is_one_clear_line(db, db_path, url):
    seed(db, 1)
    r = invoke(db_path, "--model", "m", "--base-url", url, "-q")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.output.count("\n") == 1 and "--base-url" in r.output and "URL" in r.output, r.output
    assert db.execute("SELECT count(*) FROM label_runs").fetchone()[0] == 0


def test_credentials_in_the_base_url_are_refused_and_never_stored_or_printed(db, db_path, server):
    seed(db, 2)
    secret_url = server.base_url.replace("http://", "http://alice:url-secret-4242@")
    r = invoke(db_path, "--model", "m", "--base-url", secret_url, "-q")
    text = " ".join(r.output.split())
    assert r.exit_code == 1 and "carries credentials" in text and "--api-key-env" in text
    assert "url-secret-4242" not in r.output and "[redacted]@127.0.0.1" in r.output
    assert b"url-secret-4242" not in db_path.read_bytes()
    assert server.chat_requests() == [] and db.execute("SELECT count(*) FROM label_runs").fetchone()[0] == 0
    r = invoke(db_path, "--model", "m", "--base-url", "http://alice:url-secret-4242@127.0.0.1:80x/v1", "-q")
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert "not a valid URL" in r.output and "url-secret-4242" not in r.output


def test_cached_input_is_read_from_usage_and_priced_at_the_cached_rate(db, db_path, server):
    seed(db, 4)
    r = invoke(db_path, "--model", "gpt-4o-mini", "--base-url", server.base_url, "-q")
    assert r.exit_code == 0, r.output
    rows = db.execute("SELECT tokens_in, tokens_cached, tokens_out, cost_usd FROM llm_requests ORDER BY created_at").fetchall()
    assert rows[0][1] == 0 and all(c >= 1024 for _, c, _, _ in rows[1:])  # the fixed prefix, after the first
    price = price_for("gpt-4o-mini")
    for tin, cached, tout, cost in rows:
        assert cost == pytest.approx(price.cost(tin, tout, cached))
    text = " ".join(r.output.split())
    total_cached = sum(c for _, c, _, _ in rows)
    assert f"({total_cached:,} of them cached)" in text
    assert "gpt-4o-mini: 4 requests" in text and "$0.15 in, $0.075 cached in, $0.6 out per million tokens" in text
