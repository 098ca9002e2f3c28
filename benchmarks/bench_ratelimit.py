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

Targets for 1, 2 and 3: at least 90% of the binding limit, at most 2% of requests answered 429,
nothing lost. ``--quick`` runs a tenth of every run, for a look (no targets).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from annotator.store import open_db
from annotator.taxonomy import load_taxonomy

from benchmarks.judge_server import ROOT, judge_server, label, seed
from benchmarks.targets import Targets

RPM, TPM, LATENCY = 600, 400_000, 0.2


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


def one_pass(db, tax, name: str, headers: bool, n: int, **client_options) -> Pass:
    with judge_server(latency=LATENCY, rpm=RPM, tpm=TPM, ratelimit_headers=headers) as base_url:
        ids = seed(db, n, name, terminate=False)
        done = asyncio.run(label(db, tax, base_url, ids, f"bench-{name}", timeout=60, max_attempts=5, **client_options))
        got = stats(base_url)
    return Pass(name, done.wall, got["statuses"].get("200", 0), got["rate_limited"], got["tokens"],
                done.items["failed"], n)


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
    targets = Targets()
    for p in passes[:3]:
        print(f"{p.name}: {p.used:.1%} of the binding limit ("
              + targets.at_least(f"{p.name}: share of the limit", p.used * 100, 90, "%")
              + f"), {p.share_429:.1%} answered 429 ("
              + targets.at_most(f"{p.name}: answered 429", p.share_429 * 100, 2, "%")
              + f"), {p.lost} lost (" + targets.at_most(f"{p.name}: lost", p.lost, 0) + ")")
    return targets.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
