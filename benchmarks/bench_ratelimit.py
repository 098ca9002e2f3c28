"""Bulk labelling at a provider's rate limits: adaptive pacing side by side with fixed concurrency.

The project's test server, in its own process with 200 ms latency, enforces 600 requests and
400,000 tokens a minute the way providers do (token buckets refilled continuously, one second of
burst, 429 with Retry-After; with or without OpenAI's x-ratelimit headers). The codebook is
MAST's three FC3 modes, so a request is about 700 tokens and both limits are close to binding.
Every run labels its own trajectories under its own model name, so nothing is answered from the
cache. Per run: requests and tokens per minute, the share of the binding limit used, the share of
requests answered 429, and the trajectories lost (failed after their attempts ran out).

1. adaptive, the server sends headers: 1,200 trajectories, two minutes at the limit;
2. adaptive, no headers, ``--rpm 600 --tpm 400000`` given: 1,200 trajectories;
3. adaptive, no headers and no budget (only 429s say it): 600 trajectories;
4. and 5. the pacing of old, a fixed 16 and 64 requests in flight: the same 1,000 trajectories.

Targets for 1 and 2: at least 90% of the binding limit, at most 2% of requests answered 429,
nothing lost. ``--quick`` runs a tenth of every run, for a look (no targets).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from annotator.labelling.judge import JudgeSettings, LLMLabeller
from annotator.labelling.llm import JudgeClient
from annotator.labelling.pricing import Usage, price_for
from annotator.labelling.runner import run_labeller
from annotator.models import LabelRun, Step, Trajectory
from annotator.store import open_db
from annotator.store.requests import item_counts
from annotator.store.runs import create_run
from annotator.store.trajectories import save_trajectory
from annotator.taxonomy import load_taxonomy

ROOT = Path(__file__).resolve().parents[1]
RPM, TPM, LATENCY = 600, 400_000, 0.2
API_KEY = "sk-bench-not-a-key"


@dataclass
class Pass:
    name: str
    wall: float
    answered: int
    rate_limited: int
    tokens: float
    lost: int
    trajectories: int

    @property
    def rpm(self) -> float:
        return self.answered / self.wall * 60

    @property
    def tpm(self) -> float:
        return self.tokens / self.wall * 60

    @property
    def used(self) -> float:
        """Share of the binding limit: the larger of the two shares."""
        return max(self.rpm / RPM, self.tpm / TPM)

    @property
    def share_429(self) -> float:
        return self.rate_limited / max(1, self.answered + self.rate_limited)


def start_server(headers: bool) -> tuple[subprocess.Popen, str]:
    code = (
        "import sys; from tests.openai_server import FakeOpenAI\n"
        f"with FakeOpenAI(latency={LATENCY}, rpm={RPM}, tpm={TPM}, ratelimit_headers={headers}) as s:\n"
        "    print(s.base_url, flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    return proc, proc.stdout.readline().strip()


def stats(base_url: str) -> dict:
    with urllib.request.urlopen(base_url + "/stats") as resp:
        return json.load(resp)


def fc3_codebook(folder: Path) -> Path:
    """MAST's FC3 category alone, as a codebook file."""
    data = yaml.safe_load((ROOT / "taxonomy" / "mast.yaml").read_text())
    data["categories"] = [c for c in data["categories"] if c["id"] == "FC3"]
    data["modes"] = [m for m in data["modes"] if m["category"] == "FC3"]
    path = folder / "fc3.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def seed(db, prefix: str, n: int) -> list[str]:
    ids = []
    for i in range(n):
        tid = f"{prefix}-{i:04d}"
        contents = [f"Task {i}: add {i} and {i + 1}.", f"I compute {i} + {i + 1}.", "LOOP: I compute it again.",
                    f"The answer is {2 * i + 1}."]
        steps = [Step(index=k, agent="user" if k == 0 else "solver", content=c) for k, c in enumerate(contents)]
        save_trajectory(db, Trajectory(id=tid, source_format="bench", task=contents[0], steps=steps, content_hash=tid))
        ids.append(tid)
    return ids


async def label(db, tax, base_url: str, ids: list[str], model: str, **client_opts) -> tuple[float, int]:
    client = JudgeClient(base_url=base_url, api_key=API_KEY, timeout=60, max_attempts=5, **client_opts)
    labeller = LLMLabeller(db, client, JudgeSettings(models=[model], base_url=base_url), tax,
                           prices={model: price_for(model)}, usage=Usage(), endpoint_host="127.0.0.1")
    run = create_run(db, LabelRun(kind="llm", model=model))
    start = time.perf_counter()
    try:
        run = await run_labeller(db, labeller, tax, run, ids, concurrency=client_opts.get("concurrency", 16))
    finally:
        await client.close()
    return time.perf_counter() - start, item_counts(db, run.id)["failed"]


def one_pass(db, tax, name: str, headers: bool, n: int, **client_opts) -> Pass:
    server, base_url = start_server(headers)
    try:
        ids = seed(db, name, n)
        wall, lost = asyncio.run(label(db, tax, base_url, ids, f"bench-{name}", **client_opts))
        got = stats(base_url)
    finally:
        server.stdin.close()
        server.wait(timeout=30)
    return Pass(name, wall, got["statuses"].get("200", 0), got["rate_limited"], got["tokens"], lost, n)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of every run, no targets")
    quick = parser.parse_args(argv).quick
    scale = 0.1 if quick else 1.0
    passes = []
    with tempfile.TemporaryDirectory() as tmp:
        tax = load_taxonomy(fc3_codebook(Path(tmp)))
        db = open_db(Path(tmp) / "bench.db")
        plan = [
            ("adaptive, headers", True, 1200, {"concurrency": 16}),
            ("adaptive, --rpm/--tpm", False, 1200, {"concurrency": 16, "rpm": RPM, "tpm": TPM}),
            ("adaptive, 429s only", False, 600, {"concurrency": 16}),
            ("fixed concurrency 16", True, 1000, {"concurrency": 16, "adaptive": False}),
            ("fixed concurrency 64", True, 1000, {"concurrency": 64, "adaptive": False}),
        ]
        print(f"server: {RPM} requests/min, {TPM:,} tokens/min, {LATENCY * 1000:.0f} ms latency, own process")
        print(f"{'run':<24} {'n':>5} {'wall s':>7} {'req/min':>8} {'tok/min':>9} {'of limit':>9} {'429s':>6}"
              f" {'429 %':>6} {'lost':>5}")
        for i, (name, headers, n, opts) in enumerate(plan):
            p = one_pass(db, tax, f"r{i}", headers, max(20, int(n * scale)), **opts)
            p.name = name
            passes.append(p)
            print(f"{name:<24} {p.trajectories:>5} {p.wall:>7.1f} {p.rpm:>8.0f} {p.tpm:>9,.0f} {p.used:>8.1%}"
                  f" {p.rate_limited:>6} {p.share_429:>6.1%} {p.lost:>5}", flush=True)
        db.close()
    if quick:
        return 0
    failed = []
    for p in passes[:2]:
        ok = p.used >= 0.9 and p.share_429 <= 0.02 and p.lost == 0
        print(f"{p.name}: {p.used:.1%} of the binding limit (target >= 90%), {p.share_429:.1%} answered 429"
              f" (target <= 2%), {p.lost} lost (target 0): {'met' if ok else 'NOT MET'}")
        if not ok:
            failed.append(p.name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
