"""Reports at scale: 100,000 trajectories × 14 modes × 3 label sources.

Builds (once, cached under benchmarks/.data/) a database with a person ("alice", every
trajectory marked done), a completed pre-labelling run ("run:1") and an imported set
("dataset"), 4.2 million current labels in all, generated with bulk inserts. Then, each in a
fresh process so peak memory is its own, it times a full report over alice (bootstrap
intervals with 1,000 replicates and both logistic regressions, rendered to JSON with every
trajectory listed) and the agreement of the three sources with alice as reference (1,000
replicates). Targets: ≤ 10 s and ≤ 1 GB peak RSS each on a 2-core machine. The machine may be
shared, so CPU time and the load average are printed beside the wall time. The round trip of
a label export over the same database is ``bench_export``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

N_TRAJECTORIES = 100_000
DATA = Path(__file__).resolve().parent / ".data"
DB_PATH = DATA / "report_100k.db"
SOURCES = ("alice", "run:1", "dataset")
SYSTEMS = np.array(["AG2", "ChatDev", "MetaGPT", "Magentic-One", "OpenManus"])
MODELS = np.array(["gpt-4o", "claude-3.7-sonnet", "qwen2.5-coder-32b", "gpt-oss-120b"])
BENCHMARKS = np.array(["GSM-Plus", "ProgramDev", "GAIA"])
#: Base prevalence per mode among failed and among successful trajectories.
P_FAILED = np.array([.30, .04, .35, .05, .28, .04, .15, .18, .02, .04, .25, .20, .30, .26])
P_SUCCEEDED = np.array([.12, .02, .20, .02, .10, .02, .08, .06, .01, .02, .10, .03, .08, .10])


def generate(path: Path) -> None:
    """Write the benchmark database with bulk inserts (one transaction per table and source)."""
    from annotator.models import LabelRun
    from annotator.store import open_db, synthetic
    from annotator.store.runs import create_run
    from annotator.taxonomy import load_taxonomy

    tax = load_taxonomy()
    rng = np.random.default_rng(42)
    n, k = N_TRAJECTORIES, len(tax.mode_ids)
    ids = np.array([f"t{i:06d}" for i in range(n)])
    failed = rng.random(n) < 0.6
    n_steps = rng.integers(8, 200, n)
    db = open_db(path)
    stamp = datetime.now(UTC).isoformat()
    system, model, bench = rng.integers(0, 5, n), rng.integers(0, 4, n), rng.integers(0, 3, n)
    synthetic.insert_trajectory_rows(db, (
        {"id": ids[i], "schema_version": 1, "source_format": "bench", "title": f"bench {i}",
         "system": SYSTEMS[system[i]], "model": MODELS[model[i]], "benchmark": BENCHMARKS[bench[i]],
         "outcome": "failure" if failed[i] else "success", "metadata": "{}", "content_hash": ids[i],
         "imported_at": stamp, "n_steps": int(n_steps[i]), "agents": "[]"}
        for i in range(n)
    ))
    system_bias = np.linspace(0.8, 1.25, 5)[system][:, None]
    truth = rng.random((n, k)) < np.where(failed[:, None], P_FAILED, P_SUCCEEDED) * system_bias
    onset = (rng.random((n, k)) * n_steps[:, None]).astype(np.int64)
    run = create_run(db, LabelRun(kind="llm", model="bench-judge", status="completed"))
    assert run.annotator == "run:1"
    modes = np.array(tax.mode_ids)
    for source, flip, provenance in (("alice", 0.03, "human"), ("run:1", 0.08, "llm"), ("dataset", 0.05, "imported")):
        seen = truth ^ (rng.random((n, k)) < flip)
        shift = np.where(rng.random((n, k)) < 0.3, rng.integers(-3, 4, (n, k)), 0)
        steps = np.clip(onset + shift, 0, n_steps[:, None] - 1)
        rows, cols = np.indices((n, k))
        verdicts = np.where(seen, "present", "absent").ravel()
        onsets = np.where(seen, steps, -1).ravel()
        synthetic.insert_label_cells(db, (
            (t, source, m, v, None if o < 0 else int(o))
            for t, m, v, o in zip(ids[rows.ravel()], modes[cols.ravel()], verdicts, onsets, strict=True)
        ), provenance=provenance, taxonomy_hash=tax.version_hash)
    synthetic.insert_reviews_done(db, "alice", ids.tolist())
    db.conn.execute("ANALYZE")
    db.close()


def _report(which: str, start: float, cpu_start: float, detail: str) -> None:
    elapsed, cpu = time.perf_counter() - start, _cpu() - cpu_start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{which:<10} {elapsed:6.2f} s wall  {cpu:6.2f} s CPU  peak RSS {peak_mb:5.0f} MB  "
          f"load {os.getloadavg()[0]:.1f}  {detail}", flush=True)


def child(which: str) -> None:
    """Time one task in this process and print its figures."""
    from annotator.report import render_json
    from annotator.report.agreement_report import build_agreement
    from annotator.report.document import build_report
    from annotator.store import open_db
    from annotator.taxonomy import load_taxonomy

    db = open_db(DB_PATH)
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
    text = render_json.render(doc)
    counted = doc.header["counts"]["trajectories_counted"]
    _report(which, start, cpu_start, f"{counted:,} trajectories, {len(text) / 1e6:.1f} MB JSON; {detail}")


def _cpu() -> float:
    """CPU seconds of this process, all threads (SQLite readers and BLAS) included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def ensure() -> Path:
    """The benchmark database, generated first if it is not there."""
    DATA.mkdir(exist_ok=True)
    if not DB_PATH.exists():
        print(f"generating {DB_PATH} ({N_TRAJECTORIES:,} trajectories × 14 modes × 3 sources) ...", flush=True)
        start = time.perf_counter()
        partial = DB_PATH.with_suffix(".partial")
        for leftover in DATA.glob(partial.name + "*"):
            leftover.unlink()
        generate(partial)
        partial.rename(DB_PATH)
        print(f"generated in {time.perf_counter() - start:.0f} s", flush=True)
    return DB_PATH


def main() -> int:
    ensure()
    for which in sys.argv[1:] or ("report", "agreement"):
        code = subprocess.call([sys.executable, "-m", "benchmarks.bench_report", "--child", which])
        if code:
            return code
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child(sys.argv[2])
        sys.exit(0)
    sys.exit(main())
