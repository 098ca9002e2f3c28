"""Run every benchmark module (``bench_*.py``) in its own process, so that peak memory is its own.

``python -m benchmarks`` runs all; ``python -m benchmarks import tui`` runs those whose name
contains one of the words. Each module prints its figures; a failing one makes the run fail.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    modules = sorted(p.stem for p in HERE.glob("bench_*.py"))
    if argv:
        modules = [m for m in modules if any(word in m for word in argv)]
    failed = []
    for name in modules:
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{name}"], cwd=HERE.parent)
        print(f"--- {name}: {'ok' if code == 0 else f'FAILED (exit {code})'} in {time.perf_counter() - start:.1f} s")
        if code:
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
