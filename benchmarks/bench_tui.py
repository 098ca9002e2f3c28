"""How fast the annotation app opens a huge trajectory and moves between its steps (Pilot-driven).

Builds a database with one 10,000-step trajectory in which 12 tool results are 4 MB each, then,
in a headless app of 140x42 cells: the time from asking for the trajectory to the replay screen
being drawn, and the latency of single step moves (``j`` in review mode, across the big steps),
of ``L`` on a 4 MB step (its whole content), of ``G`` (jump to the last step), of tagging a mode
and of the once-a-second look for other processes' writes (nothing changed; another annotator tagged). Each Pilot key press also pays the
harness's own waits, so the same is measured for a key bound to nothing and the difference is
printed as the app's share.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from annotator.models import Label, Step, Trajectory
from annotator.store import labels, open_db
from annotator.store.trajectories import save_trajectory
from annotator.tui.app import make_app

from benchmarks.targets import Targets

N_STEPS = 10_000
BIG_EVERY = 25
N_BIG = 12
BIG_BYTES = 4_000_000
MOVES = 400


def build(path: Path) -> None:
    big = ('{"row": "' + "x" * 90 + '"}\n') * (BIG_BYTES // 100)
    steps = []
    for i in range(N_STEPS):
        if i % BIG_EVERY == 3 and i // BIG_EVERY < N_BIG:
            steps.append(Step(index=i, agent="Tool", kind="tool_result", tool_name="dump_table", content=big))
        elif i % 5 == 2:
            steps.append(Step(index=i, agent="Coder", kind="tool_call", tool_name="run", tool_args='{"cmd": "pytest -q"}'))
        else:
            steps.append(Step(index=i, agent=("Planner", "Coder", "Critic")[i % 3], content=f"step {i}: " + "thinking " * 40))
    db = open_db(path)
    save_trajectory(db, Trajectory(id="huge", source_format="bench", title="10k steps", content_hash="h", steps=steps))
    db.close()


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
    return f"median {statistics.median(values) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms, max {values[-1] * 1000:.1f} ms"


async def measure(path: Path, targets: Targets) -> None:
    app = make_app(path, "bench")
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.pause()
        start = time.perf_counter()
        screen = app.open_trajectory("huge")
        await pilot.pause()
        opened = time.perf_counter() - start
        assert screen.is_mounted and screen.n_steps == N_STEPS
        print(f"open a {N_STEPS:,}-step trajectory: {opened * 1000:.0f} ms   "
              + targets.at_most("open", opened * 1000, 500, " ms"))

        await pilot.press("R")
        idle = []
        for _ in range(100):
            start = time.perf_counter()
            await pilot.press("z")
            idle.append(time.perf_counter() - start)
        print(f"harness cost of a key bound to nothing (z): {_ms(idle)}")
        moves, big_moves = [], []
        for _ in range(MOVES):
            start = time.perf_counter()
            await pilot.press("j")
            elapsed = time.perf_counter() - start
            moves.append(elapsed)
            if screen.cursor % BIG_EVERY == 3 and screen.cursor // BIG_EVERY < N_BIG:
                big_moves.append(elapsed)
        print(f"one step move (j, {MOVES} moves): {_ms(moves)}")
        share = statistics.median(moves) - statistics.median(idle)
        print(f"one step move, app's share (median j - median z): {share * 1000:.1f} ms   "
              + targets.at_most("step move", share * 1000, 50, " ms"))
        print(f"moves onto a {BIG_BYTES / 1e6:.0f} MB step ({len(big_moves)}): {_ms(big_moves)}")

        await pilot.press("g", "j", "j", "j")
        assert screen.cursor == 3
        start = time.perf_counter()
        await pilot.press("L")
        print(f"show the whole {BIG_BYTES / 1e6:.0f} MB step (L): {(time.perf_counter() - start) * 1000:.1f} ms")

        start = time.perf_counter()
        await pilot.press("G")
        print(f"jump to the last step (G): {(time.perf_counter() - start) * 1000:.1f} ms")
        tags = []
        for key in "12345":
            start = time.perf_counter()
            await pilot.press(key)
            tags.append(time.perf_counter() - start)
        print(f"tag a mode (saved to SQLite): {_ms(tags)}")

        idle_polls = []
        for _ in range(1000):
            start = time.perf_counter()
            app.poll_store()
            idle_polls.append(time.perf_counter() - start)
        print(f"look for other processes' writes, nothing changed: median {statistics.median(idle_polls) * 1e6:.0f} µs")
        other = open_db(path)
        shown = []
        for step in range(20):
            labels.add_labels(other, [Label(trajectory_id="huge", mode_id="FM-2.1", annotator="other", verdict="present", onset_step=step)])
            start = time.perf_counter()
            app.poll_store()
            shown.append(time.perf_counter() - start)
            await pilot.pause()
        other.close()
        print(f"look after another annotator tagged (queries, panel updated, before drawing): {_ms(shown)}")


def main() -> int:
    targets = Targets()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        start = time.perf_counter()
        build(path)
        print(f"built the database in {time.perf_counter() - start:.1f} s")
        asyncio.run(measure(path, targets))
    return targets.exit_code


if __name__ == "__main__":
    sys.exit(main())
