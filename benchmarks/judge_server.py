"""What the judge benchmarks share: the test server in a process of its own, small trajectories
to label, and one timed labelling pass through the runner.

The server runs in a child process so that its work does not share the benchmark's
interpreter (and GIL): the runner's CPU time is then its own.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from annotator.labelling.judge import JudgeSettings, LLMLabeller
from annotator.labelling.llm import JudgeClient
from annotator.labelling.pricing import Usage, price_for
from annotator.labelling.runner import run_labeller
from annotator.models import LabelRun, Step, Trajectory
from annotator.store.requests import item_counts
from annotator.store.runs import create_run
from annotator.store.trajectories import save_trajectory
from annotator.taxonomy import Taxonomy

ROOT = Path(__file__).resolve().parents[1]
API_KEY = "sk-bench-not-a-key"


@contextmanager
def judge_server(**options: object) -> Iterator[str]:
    """The test server (``tests.openai_server.FakeOpenAI(**options)``) in a child process: its base URL."""
    arguments = ", ".join(f"{name}={value!r}" for name, value in options.items())
    code = (
        "import sys; from tests.openai_server import FakeOpenAI\n"
        f"with FakeOpenAI({arguments}) as s:\n"
        "    print(s.base_url, flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def seed(db, n: int, prefix: str = "bench", *, terminate: bool = True) -> list[str]:
    """``n`` five-step (four without the closing ``TERMINATE``) arithmetic trajectories: their ids."""
    ids = []
    for i in range(n):
        tid = f"{prefix}-{i:04d}"
        contents = [f"Task {i}: add {i} and {i + 1}.", f"I compute {i} + {i + 1}.", "LOOP: I compute it again.",
                    f"The answer is {2 * i + 1}.", *(["TERMINATE"] if terminate else [])]
        steps = [Step(index=k, agent="user" if k == 0 else "solver", content=c) for k, c in enumerate(contents)]
        save_trajectory(db, Trajectory(id=tid, source_format="bench", task=contents[0], steps=steps, content_hash=tid))
        ids.append(tid)
    return ids


@dataclass
class LabelPass:
    """One labelling pass: wall and CPU seconds, requests sent and answered from the cache, the
    run's items by status."""

    wall: float
    cpu: float
    sent: int
    cached: int
    items: dict[str, int]


async def label(db, tax: Taxonomy, base_url: str, ids: list[str], model: str, *, timeout: float,
                max_attempts: int, concurrency: int = 16, **client_options: object) -> LabelPass:
    """Label ``ids`` under ``model`` through the runner, as ``mast prelabel`` does."""
    client = JudgeClient(base_url=base_url, api_key=API_KEY, timeout=timeout, max_attempts=max_attempts,
                         concurrency=concurrency, **client_options)
    usage = Usage()
    labeller = LLMLabeller(db, client, JudgeSettings(models=[model], base_url=base_url), tax,
                           prices={model: price_for(model)}, usage=usage, endpoint_host="127.0.0.1")
    run = create_run(db, LabelRun(kind="llm", model=model))
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        run = await run_labeller(db, labeller, tax, run, ids, concurrency=concurrency, usage=usage)
    finally:
        await client.close()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return LabelPass(wall, cpu, labeller.sent, labeller.cached, item_counts(db, run.id))
