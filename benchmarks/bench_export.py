"""The round trip of a label export, beside what orjson takes to write the same rows.

On the report benchmark's database (``bench_report``: 100,000 trajectories × 14 modes × 3
sources), ``export`` writes the JSONL of two sources over one system (``alice`` and
``dataset``, ``--system AG2``: 20,224 trajectories, 566,272 rows), ``import`` reads that file
into a new database (one stub per trajectory) and ``reimport`` reads it again into the same
one, which must change nothing. ``floor`` is orjson writing the same rows, already parsed, a
block of lines at a time: what any export of them costs at least. Each step runs in a fresh
process (peak RSS its own), in a temporary folder of its own, so two runs never share a file.

Targets: the export ≤ 4 s, the import ≤ 8 s of wall time, checked (a miss fails the run). The
machine is shared, so CPU time is printed beside it with the load average and the ratio of each
step to the floor: the wall time waits for other jobs, and the export's reads take two cores.
A step's time starts once its modules are imported (what any command pays on start, the
floor's included, is not the step's) and what earlier steps and benchmarks wrote is on disk (the
kernel writing back the export's 274 MB, or a report database's pages, is not the import's
work), and ends when its file is written.
"""

from __future__ import annotations

import filecmp
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import bench_report
from benchmarks.targets import Targets

SOURCES = ["alice", "dataset"]
SYSTEM = "AG2"
#: Targets (seconds of wall time) of the steps, checked where they are printed.
TARGETS = {"export": 4.0, "import": 8.0}
STEPS = ("export", "floor", "import", "reimport")


def _cpu() -> float:
    """CPU seconds of this process, all threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(step):
    """(what ``step()`` said, wall seconds, CPU seconds) of one call."""
    start, cpu_start = time.perf_counter(), _cpu()
    said = step()
    return said, time.perf_counter() - start, _cpu() - cpu_start


def _export(folder: Path) -> tuple[str, float, float]:
    from annotator.report.export import write_export
    from annotator.report.output import atomic_file
    from annotator.store import open_db
    from annotator.taxonomy import load_taxonomy
    from annotator.views import TrajectoryFilter

    database, path = bench_report.ensure("100k", 100_000), folder / "export.jsonl"

    def export() -> None:
        db = open_db(database)
        with atomic_file(path) as fh:  # as `mast export -o` writes
            write_export(db, "jsonl", SOURCES, load_taxonomy(), fh, TrajectoryFilter(system=SYSTEM))

    _, wall, cpu = _timed(export)
    with path.open("rb") as fh:
        return f"{sum(1 for _ in fh):,} rows, {path.stat().st_size / 1e6:.0f} MB", wall, cpu


#: Rows parsed at a time for the floor (only the writing is timed; memory holds one block).
BLOCK = 4096


def _floor(folder: Path) -> tuple[str, float, float]:
    """orjson writing the export's rows, parsed beforehand a block at a time: only the
    writing is timed, and memory holds one block. Each row goes to the buffered file as
    orjson gives it: joining a block first would time the allocator too (freeing a block of
    rows at once returns the heap to the system, and the next block faults it back in page
    by page, which cost more than writing the rows)."""
    import orjson

    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    wall = cpu = 0.0
    n = 0
    with (folder / "export.jsonl").open("rb") as src, (folder / "floor.jsonl").open("wb") as out:
        write = out.write
        while block := [orjson.loads(line) for _, line in zip(range(BLOCK), src, strict=False)]:
            start, cpu_start = time.perf_counter(), _cpu()
            for row in block:
                write(dumps(row, option=newline))
            wall, cpu, n = wall + time.perf_counter() - start, cpu + _cpu() - cpu_start, n + len(block)
    same = filecmp.cmp(folder / "floor.jsonl", folder / "export.jsonl", shallow=False)
    return f"{n:,} rows, {'the same bytes' if same else 'NOT the same bytes'} as the export", wall, cpu


def _import(folder: Path) -> tuple[str, float, float]:
    from annotator.importers.importing import import_paths
    from annotator.store import open_db

    f, wall, cpu = _timed(lambda: import_paths(open_db(folder / "import.db"), [folder / "export.jsonl"]).files[0])
    if f.error:
        raise SystemExit(f.error)
    return f"{f.imported:,} imported, {f.unchanged:,} unchanged, {f.labels:,} labels written", wall, cpu


def child(which: str, folder: Path) -> None:
    """Time one step in this process; print its figures as one JSON line."""
    os.sync()  # what was written before is not this step's to wait for
    detail, wall, cpu = {"floor": _floor, "export": _export}.get(which, _import)(folder)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall": wall, "cpu": cpu, "rss": rss, "load": os.getloadavg()[0], "detail": detail}), flush=True)


def main(argv: list[str]) -> int:
    """``python -m benchmarks.bench_export [export|floor|import|reimport ...]`` (each needs the
    steps before it: they run in one temporary folder)."""
    bench_report.ensure("100k", 100_000)  # generated once, cached
    steps = [s for s in STEPS if s in argv] or list(STEPS)
    steps = list(STEPS[: max(STEPS.index(s) for s in steps) + 1])
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench_export.", dir=bench_report.CACHE) as tmp:  # beside its database
        for which in steps:
            done = subprocess.run([sys.executable, "-m", "benchmarks.bench_export", "--child", which, tmp],
                                  stdout=subprocess.PIPE, text=True)
            if done.returncode:
                return done.returncode
            f = results[which] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"{which:<9} {f['wall']:6.2f} s wall {f['cpu']:6.2f} s CPU  peak RSS {f['rss']:4.0f} MB"
                  f"  load {f['load']:4.1f}  {f['detail']}", flush=True)
    targets = Targets()
    print(f"\n{'':<9} {'wall':>8} {'CPU':>8} {'CPU ÷ floor':>12}   target (wall)")
    for which, f in results.items():
        ratio = f"{f['cpu'] / results['floor']['cpu']:.1f}×" if "floor" in results else ""
        target = targets.at_most(which, f["wall"], TARGETS[which], " s") if which in TARGETS else ""
        print(f"{which:<9} {f['wall']:6.2f} s {f['cpu']:6.2f} s {ratio:>12}   {target}")
    return targets.exit_code


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], Path(sys.argv[3]))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
