"""Bulk pre-labelling throughput against a local OpenAI-compatible server with 200 ms latency.

1,000 small trajectories, one judge request each, labelled at concurrency 1, 16 and 64 (each
under its own model name, so nothing is answered from the cache), then once more fully cached.
The runner's own overhead per request is measured three ways: the CPU time of this process
per request at concurrency 64 (the server runs in its own process, so this is the runner's
cost alone); the wall time per request at concurrency 1 against a second server with no
latency (runner, HTTP and the server's own work: an upper bound); and the wall time per
request at concurrency 1 beyond the 200 ms (which adds the server's sleep overshoot on a
loaded machine; agentdash's line shows the same for a client that does almost nothing).

Side by side, the same 1,000 trajectories go through the official MAST annotator package
``agentdash`` (PyPI), pointed at the same server through ``OPENAI_BASE_URL`` and used as its
README shows (``annotator(key).produce_taxonomy(trace)``, one trace after another: it has no
concurrency of its own). The server answers its prompt in the ``@@`` format it parses.
agentdash is installed into the running environment if missing; if it cannot be installed or
run, the reason is printed and the rest of the figures still are.

``--n N`` labels N trajectories instead of 1,000 (for a quick look; the targets are for 1,000).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from annotator.store import open_db
from annotator.store.trajectories import get_trajectory
from annotator.taxonomy import load_taxonomy

from benchmarks.judge_server import API_KEY, LabelPass, judge_server, seed
from benchmarks.judge_server import label as label_pass
from benchmarks.targets import Targets

LATENCY = 0.2
AGENTDASH = "agentdash==0.1.0"


def label(db, base_url: str, ids: list[str], model: str, concurrency: int) -> LabelPass:
    t = asyncio.run(label_pass(db, load_taxonomy(), base_url, ids, model, timeout=30, max_attempts=3,
                               concurrency=concurrency))
    if t.items["done"] != len(ids):
        raise SystemExit(f"run labelled {t.items['done']} of {len(ids)}: {t.items}")
    return t


def agentdash_run(db, base_url: str, ids: list[str]) -> tuple[float | None, str]:
    """agentdash's wall time over ``ids`` and how many modes it read, or None and why it could not run."""
    if importlib.util.find_spec("agentdash") is None:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", AGENTDASH],
                              capture_output=True, text=True)
        if done.returncode != 0:
            return None, f"pip install {AGENTDASH} failed: {done.stderr.strip().splitlines()[-1:]}"
    os.environ["OPENAI_BASE_URL"] = base_url  # read by the OpenAI() client agentdash constructs
    logging.getLogger("agentdash").setLevel(logging.ERROR)
    try:
        from agentdash import annotator

        judge = annotator(API_KEY, model="bench-agentdash")
        traces = ["\n".join(f"{s.agent}: {s.content}" for s in get_trajectory(db, tid).steps) for tid in ids]
        start = time.perf_counter()
        results = [judge.produce_taxonomy(trace) for trace in traces]
        wall = time.perf_counter() - start
    except Exception as exc:  # noqa: BLE001 - any failure of the foreign package is reported, not hidden
        return None, f"agentdash failed: {type(exc).__name__}: {exc}"
    found = sum(r["failure_modes"].get("1.3", 0) for r in results)
    return wall, f"{len(results)} traces annotated, FM-1.3 read as present in {found}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="trajectories (default 1,000)")
    n = parser.parse_args(argv).n
    with ExitStack() as stack:
        base_url = stack.enter_context(judge_server(latency=LATENCY))
        bare_url = stack.enter_context(judge_server(latency=0.0))
        db = open_db(Path(stack.enter_context(tempfile.TemporaryDirectory())) / "bench.db")
        stack.callback(db.close)
        ids = seed(db, n)
        print(f"{n:,} trajectories, one request each, server latency {LATENCY * 1000:.0f} ms (own process)")
        print(f"{'run':<28} {'wall s':>8} {'req/s':>8} {'ideal s':>8} {'x ideal':>8} {'CPU ms/req':>11}")
        runs: dict[int, LabelPass] = {}
        for c in (64, 16, 1):
            t = runs[c] = label(db, base_url, ids, f"bench-c{c}", c)
            ideal = n * LATENCY / c
            print(f"{f'concurrency {c}':<28} {t.wall:>8.2f} {t.sent / t.wall:>8.1f} {ideal:>8.2f}"
                  f" {t.wall / ideal:>8.2f} {t.cpu / t.sent * 1000:>11.2f}")
        bare1 = label(db, bare_url, ids, "bench-bare", 1)
        print(f"{'concurrency 1, no latency':<28} {bare1.wall:>8.2f} {bare1.sent / bare1.wall:>8.1f} {'':>8}"
              f" {'':>8} {bare1.cpu / bare1.sent * 1000:>11.2f}")
        cached = label(db, base_url, ids, "bench-c64", 64)
        print(f"{'fully cached re-run':<28} {cached.wall:>8.2f} {'':>8} {'':>8} {'':>8}"
              f" {'':>11}   ({cached.cached:,} cached, {cached.sent} sent)")
        ad_wall, ad_note = agentdash_run(db, base_url, ids)
        if ad_wall is not None:
            print(f"{'agentdash ' + AGENTDASH.split('==')[1]:<28} {ad_wall:>8.2f} {n / ad_wall:>8.1f}"
                  f" {n * LATENCY:>8.2f} {ad_wall / (n * LATENCY):>8.2f}   ({ad_note})")
    c1, c64 = runs[1], runs[64]
    overhead_wall = (c1.wall / c1.sent - LATENCY) * 1000
    ideal64 = n * LATENCY / 64
    targets = Targets()
    print()
    print(f"concurrency 64 vs ideal {ideal64:.2f} s: {c64.wall / ideal64:.2f}x   "
          + targets.at_most("concurrency 64 vs ideal", c64.wall / ideal64, 1.5, "x"))
    overhead = c64.cpu / c64.sent * 1000
    print(f"runner overhead per request: {overhead:.2f} ms CPU at concurrency 64;"
          f" {bare1.wall / bare1.sent * 1000:.2f} ms round trip with no latency;"
          f" {overhead_wall:.2f} ms beyond the 200 ms at concurrency 1   "
          + targets.at_most("runner overhead", overhead, 5, " ms"))
    print(f"fully cached re-run of {n:,}: {cached.wall:.2f} s   "
          + targets.at_most("cached re-run", cached.wall, 2, " s"))
    if ad_wall is None:
        print(f"agentdash: not measured: {ad_note}")
        targets.missed.append("agentdash not measured")
    else:
        print(f"speed-up over agentdash on the same {n:,}: {ad_wall / c64.wall:.1f}x at concurrency 64,"
              f" {ad_wall / runs[16].wall:.1f}x at the default 16, {ad_wall / c1.wall:.2f}x at 1   "
              + targets.at_least("speed-up over agentdash", ad_wall / c64.wall, 30, "x"))
    return targets.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
