"""Reports at scale: 10,000, 100,000 and 1,000,000 trajectories × 14 modes × 3 label sources.

Builds (once per size, cached outside the work tree in ``~/.cache/mast-annotator/benchmarks/``
or ``$MAST_BENCH_CACHE``) a database with a person ("alice", every trajectory marked done), a
completed pre-labelling run ("run:1") and an imported set ("dataset"): 42 million current labels
at the largest size, written by SQL from one row per trajectory and source, with the indexes
built once at the end (minutes, not hours). Then, each in a fresh process so peak memory is its
own, it times a full report over alice (bootstrap intervals with 1,000 replicates and both
logistic regressions, written as JSON to a file with every trajectory listed) and the agreement of the
three sources with alice as reference (1,000 replicates), and prints the sizes side by side so
the growth shows. Targets: at 100,000 ≤ 10 s each and ≤ 1 GB; at 1,000,000 report ≤ 30 s,
agreement ≤ 45 s, each ≤ 2 GB peak RSS, on a 2-core machine; each is checked as it is printed,
and a miss makes the benchmark exit 1. The machine may be shared, so CPU time and the load
average are printed beside the wall time. The round trip of a label
export over the 100,000 database is ``bench_export``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from benchmarks.targets import Targets

#: The sizes measured, side by side: (name, trajectories).
SIZES = (("10k", 10_000), ("100k", 100_000), ("1m", 1_000_000))
#: Wall-time targets (seconds) and the peak RSS target (MB) of report and agreement per size.
TARGETS_AT = {"100k": ({"report": 10.0, "agreement": 10.0}, 1000), "1m": ({"report": 30.0, "agreement": 45.0}, 2000)}
#: Bumped whenever ``generate`` writes different data, so that a cached database is not reused.
GENERATOR = 3
DATA = Path(__file__).resolve().parent / ".data"
#: The generated report databases (the million one is several GB and takes minutes): outside the
#: work tree, so that every checkout and every run reuses them.
CACHE = Path(os.environ.get("MAST_BENCH_CACHE") or Path.home() / ".cache" / "mast-annotator" / "benchmarks")
SOURCES = ("alice", "run:1", "dataset")
SYSTEMS = np.array(["AG2", "ChatDev", "MetaGPT", "Magentic-One", "OpenManus"])
MODELS = np.array(["gpt-4o", "claude-3.7-sonnet", "qwen2.5-coder-32b", "gpt-oss-120b"])
BENCHMARKS = np.array(["GSM-Plus", "ProgramDev", "GAIA"])
#: Base prevalence per mode among failed and among successful trajectories.
P_FAILED = np.array([.30, .04, .35, .05, .28, .04, .15, .18, .02, .04, .25, .20, .30, .26])
P_SUCCEEDED = np.array([.12, .02, .20, .02, .10, .02, .08, .06, .01, .02, .10, .03, .08, .10])


def db_path(size: str) -> Path:
    return CACHE / f"report_{size}_v{GENERATOR}.db"


def generate(path: Path, n: int) -> None:
    """Write the benchmark database with bulk inserts (one transaction per table and source).

    The file is a scratch copy until it is renamed into place, so it is written without a
    journal and without foreign-key checks; it is a WAL database like any other afterwards.
    """
    from annotator.models import LabelRun
    from annotator.store import open_db, synthetic
    from annotator.store.runs import create_run
    from annotator.taxonomy import load_taxonomy

    tax = load_taxonomy()
    rng = np.random.default_rng(42)
    k = len(tax.mode_ids)
    ids = [f"t{i:07d}" for i in range(n)]
    failed = rng.random(n) < 0.6
    n_steps = rng.integers(8, 200, n)
    db = open_db(path)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA foreign_keys = OFF")
    db.execute("PRAGMA cache_size = -1000000")
    stamp = datetime.now(UTC).isoformat()
    system, model, bench = rng.integers(0, 5, n), rng.integers(0, 4, n), rng.integers(0, 3, n)
    synthetic.insert_trajectory_rows(db, (
        {"id": tid, "schema_version": 1, "source_format": "bench", "title": f"bench {i}", "system": s, "model": m,
         "benchmark": b, "outcome": "failure" if f else "success", "metadata": "{}", "content_hash": tid,
         "imported_at": stamp, "n_steps": steps, "agents": "[]"}
        for i, (tid, s, m, b, f, steps) in enumerate(zip(ids, SYSTEMS[system].tolist(), MODELS[model].tolist(),
                                                          BENCHMARKS[bench].tolist(), failed.tolist(),
                                                          n_steps.tolist(), strict=True))
    ))
    system_bias = np.linspace(0.8, 1.25, 5)[system][:, None]
    truth = rng.random((n, k)) < np.where(failed[:, None], P_FAILED, P_SUCCEEDED) * system_bias
    onset = (rng.random((n, k)) * n_steps[:, None]).astype(np.int64)
    run = create_run(db, LabelRun(kind="llm", model="bench-judge", status="completed"))
    assert run.annotator == "run:1"

    def matrices():
        for source, flip, provenance in (("alice", 0.03, "human"), ("run:1", 0.08, "llm"),
                                         ("dataset", 0.05, "imported")):
            seen = truth ^ (rng.random((n, k)) < flip)
            shift = np.where(rng.random((n, k)) < 0.3, rng.integers(-3, 4, (n, k)), 0)
            steps = np.clip(onset + shift, 0, n_steps[:, None] - 1)
            yield source, provenance, np.where(seen, steps, -1)

    synthetic.insert_label_matrices(db, ids, tax.mode_ids, matrices(), taxonomy_hash=tax.version_hash)
    synthetic.insert_reviews_done(db, "alice", ids)
    db.conn.execute("ANALYZE")
    db.execute("PRAGMA journal_mode = WAL")
    db.close()


def ensure(size: str, n: int) -> Path:
    """The cached database of ``n`` trajectories, generated first if it is not there."""
    path = db_path(size)
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        print(f"generating {path} ({n:,} trajectories × 14 modes × 3 sources) ...", flush=True)
        start = time.perf_counter()
        partial = path.with_suffix(".partial")
        for leftover in CACHE.glob(partial.name + "*"):
            leftover.unlink()
        generate(partial, n)
        partial.rename(path)
        print(f"generated in {time.perf_counter() - start:.0f} s, {path.stat().st_size / 1e9:.1f} GB", flush=True)
    return path


def _figures(start: float, cpu_start: float) -> dict:
    return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu_start,
            "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "load": os.getloadavg()[0]}


def _report(which: str, start: float, cpu_start: float, detail: str) -> None:
    f = _figures(start, cpu_start)
    print(f"{which:<10} {f['wall']:6.2f} s wall  {f['cpu']:6.2f} s CPU  peak RSS {f['rss']:5.0f} MB  "
          f"load {f['load']:.1f}  {detail}", flush=True)


def child(which: str, size: str) -> None:
    """Time one task over the database of ``size`` in this process; print its figures as JSON."""
    from annotator.report import output
    from annotator.report.agreement_report import build_agreement
    from annotator.report.document import build_report
    from annotator.store import open_db
    from annotator.taxonomy import load_taxonomy

    db = open_db(db_path(size))
    tax = load_taxonomy()
    start, cpu_start = time.perf_counter(), _cpu()
    if which == "report":
        doc = build_report(db, "alice", tax, seed=1, replicates=1000, row_limit=None)
        detail = f"strongest predictor {doc.header['strongest_predictor']}"
    else:
        doc = build_agreement(db, list(SOURCES), tax, reference="alice", seed=1, replicates=1000)
        pooled = next(r for r in doc.table("agreement").records if r["mode"].startswith("all"))
        ceiling = doc.table("reference").records[-1]
        human = ceiling["human_kappa_na"] or f"human κ {ceiling['human_kappa']:.3f}"
        detail = f"pooled Fleiss κ {pooled['fleiss_kappa']:.3f}, α {pooled['alpha']:.3f}, AC1 {pooled['ac1']:.3f}; {human}"
    with tempfile.TemporaryDirectory() as scratch:  # written as `mast ... --format json -o` writes
        path = Path(scratch) / f"{which}.json"
        with output.atomic_file(path) as fh:
            output.write(doc, "json", fh)
        written = path.stat().st_size
    counted = doc.header["counts"]["trajectories_counted"]
    print(json.dumps({**_figures(start, cpu_start),
                      "detail": f"{counted:,} trajectories, {written / 1e6:.1f} MB JSON; {detail}"}), flush=True)


def _cpu() -> float:
    """CPU seconds of this process, all threads (SQLite readers and BLAS) included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(which: str, size: str) -> dict | None:
    """Run one report task over one size in a fresh process (so peak memory is its own)."""
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_report", "--child", which, size],
                          stdout=subprocess.PIPE, text=True)
    if done.returncode:
        return None
    f = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{which:<10} {size:>5} {f['wall']:6.2f} s wall  {f['cpu']:6.2f} s CPU  peak RSS {f['rss']:5.0f} MB  "
          f"load {f['load']:.1f}  {f['detail']}", flush=True)
    return f


def side_by_side(results: dict[tuple[str, str], dict], targets: Targets) -> None:
    """The figures of every size next to each other, so the growth shows; then each figure
    that has a target, checked (a miss fails the benchmark)."""
    sizes = [s for s, _ in SIZES if any(k[1] == s for k in results)]
    width = 34
    print("\n" + f"{'':<10}" + "".join(f"{s:>{width}}" for s in sizes))
    for which in ("report", "agreement"):
        cells = []
        for s in sizes:
            f = results.get((which, s))
            cells.append(f"{f['wall']:.1f} s, {f['cpu']:.1f} s CPU, {f['rss']:,.0f} MB" if f else "-")
        print(f"{which:<10}" + "".join(f"{c:>{width}}" for c in cells))
    loads = [f"{results[k]['load']:.1f}" for k in results]
    print(f"load average while measuring: {', '.join(loads)} (2 cores; CPU time is the steadier figure)\n")
    for (which, size), f in results.items():
        if size in TARGETS_AT:
            walls, rss = TARGETS_AT[size]
            print(f"{which} {size}: {f['wall']:.1f} s wall   "
                  + targets.at_most(f"{which} {size} wall", f["wall"], walls[which], " s")
                  + f";  peak RSS {f['rss']:,.0f} MB   " + targets.at_most(f"{which} {size} memory", f["rss"], rss, " MB"))


def main(argv: list[str]) -> int:
    """``python -m benchmarks.bench_report [report|agreement ...] [10k|100k|1m ...]``."""
    DATA.mkdir(exist_ok=True)
    sizes = [(s, n) for s, n in SIZES if s in argv] or list(SIZES)
    tasks = [w for w in argv if w not in dict(SIZES)] or ["report", "agreement"]
    results: dict[tuple[str, str], dict] = {}
    for size, n in sizes if {"report", "agreement"} & set(tasks) else ():
        ensure(size, n)
        for which in (w for w in tasks if w in ("report", "agreement")):
            f = measure(which, size)
            if f is None:
                return 1
            results[(which, size)] = f
    targets = Targets()
    if results:
        side_by_side(results, targets)
    return targets.exit_code


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
