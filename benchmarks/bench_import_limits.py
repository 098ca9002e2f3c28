"""Peak memory of `mast import` on bad and big single inputs, against the 600 MB budget.

Each input is generated once into ``benchmarks/.data/`` and imported by a child process whose
peak RSS comes from ``wait4``. The inputs: JSON nested 10^5 deep (200 KB, refused with one
line), a zip bomb named ``.eval`` (a 1 MB archive that would inflate to 1 GiB, refused before
inflating), a 200 MB single-line chat JSON, a JSON of one million tiny steps and a 1 GB JSON
Lines file of 20,000 trajectories. A refused input must fail with one line and no traceback;
the others must import.

Target: peak RSS ≤ 600 MB for every input; the benchmark exits non-zero when one is over or
ends otherwise than it must. A baseline, the interpreter with the project
imported and nothing read, is measured in the same run for comparison.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import orjson

from benchmarks.bench_import import DATA, MAST, generate, run_measured_any
from benchmarks.targets import Targets

BUDGET_MB = 600
NESTING = 100_000
BOMB_BYTES = 1024**3


def make_deep(path: Path) -> None:
    path.write_bytes(b"[" * NESTING + b"]" * NESTING)


def make_bomb(path: Path) -> None:
    """An Inspect-shaped .eval whose one sample inflates to BOMB_BYTES of spaces."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("header.json", orjson.dumps({"version": 2, "eval": {"task": "bomb", "model": "m"}}))
        with zf.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
            fh.write(b'{"id": 1, "epoch": 1, "input": "')
            chunk = b" " * (16 * 1024**2)
            for _ in range(BOMB_BYTES // len(chunk)):
                fh.write(chunk)
            fh.write(b'", "messages": []}')


def make_big_line(path: Path, target: int = 200 * 1024**2) -> None:
    """One chat of 200 MB on a single line: 2,000 messages of 100 KB."""
    body = ("lorem ipsum dolor sit amet " * 3800)[:100_000]
    n = target // 100_000
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} {body}"} for i in range(n)]
    path.write_bytes(orjson.dumps({"messages": messages}))


def make_tiny_steps(path: Path, n: int = 1_000_000) -> None:
    with path.open("wb") as fh:
        fh.write(b'{"messages": [')
        for i in range(n):
            fh.write((b"," if i else b"") + orjson.dumps({"role": "user" if i % 2 == 0 else "assistant",
                                                          "content": f"s{i}"}))
        fh.write(b"]}")


def make_big_jsonl(path: Path, target: int = 1024**3) -> None:
    """Generic JSON Lines of ~50 KB trajectories up to 1 GB."""
    body = ("the agent checks the result " * 200)[:5000]
    with path.open("wb") as fh:
        i = 0
        while fh.tell() < target:
            steps = [{"kind": "message", "agent": "agent", "content": f"{i}.{k} {body}"} for k in range(10)]
            fh.write(orjson.dumps({"id": f"run-{i}", "task": f"task {i}", "steps": steps}) + b"\n")
            i += 1


INPUTS = [
    ("nested 10^5 deep", "deep.json", make_deep, False),
    ("zip bomb (.eval)", "bomb.eval", make_bomb, False),
    ("200 MB single-line JSON", "big_line.json", make_big_line, True),
    ("1,000,000 tiny steps", "tiny_steps.json", make_tiny_steps, True),
    ("1 GB JSON Lines", "big.jsonl", make_big_jsonl, True),
]


def main() -> int:
    DATA.mkdir(exist_ok=True)
    db = DATA / "limits.db"
    targets = Targets()
    _, _, base, _, _ = run_measured_any([sys.executable, "-c", "import annotator.cli, annotator.importers.registry"])
    print(f"baseline (interpreter and project imported): peak RSS {base:.0f} MB")
    for label, name, make, imports in INPUTS:
        path = DATA / name
        if not path.exists():
            print(f"generating {name} ...", flush=True)
            generate(make, path)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        seconds, _, rss, out, err = run_measured_any([*MAST, "--db", str(db), "import", "-q", str(path)])
        said = (err.strip().splitlines() or [""])[-1] if not imports else out.strip().splitlines()[-1]
        ok = ("Traceback" not in err) and (("0 failed" in out) if imports else (" 1 failed" in out))
        print(f"{label}: {path.stat().st_size / 1024**2:,.1f} MB in {seconds:.1f} s, peak RSS {rss:.0f} MB ("
              + targets.at_most(f"{label}: peak RSS", rss, BUDGET_MB, " MB") + "), "
              + targets.check(f"{label}: outcome", ok, f"target {'imported' if imports else 'refused'}, no traceback")
              + f"\n    {said[:200]}", flush=True)
    return targets.exit_code


if __name__ == "__main__":
    sys.exit(main())
