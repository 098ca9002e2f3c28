"""A run scanned in parts and joined finds what one scan finds, wherever the parts meet.

The trajectories are built so that each detector's finding rests on steps on both sides of a
seam for some cut: a tool call made again, a message repeated within a speaker's window of
``LOOKBACK`` messages and one repeated from just beyond it, steps after a termination signal, a
prompt sent again and again, the task restated, a turn limit among the last steps, a dangling
last call. Every cut into two parts is tried, and a sample of cuts into three and four.
"""

from __future__ import annotations

import random

import pytest

from annotator.labelling.rules import DETECTORS, LOOKBACK, MAX_CITED, RuleStep, results, scan, scan_part

TASK = "Write a function that returns the n-th Fibonacci number and test it."
WORDS = [f"w{i}" for i in range(400)]


def _long(rng: random.Random) -> str:
    """A message of clauses (longer than ``near_duplicates.SKETCH_CHARS``) that repeats no other."""
    return ", ".join(" ".join(rng.choices(WORDS, k=5)) for _ in range(12)) + "."


def _steps(items: list[tuple[str, str, str, str | None]]) -> list[RuleStep]:
    """(agent, kind, content, tool_args) in order; a tool call's result links back to it."""
    return [RuleStep(i, agent, None, kind, content, "run" if kind == "tool_call" else None, args,
                     i + 1 if kind == "tool_call" and i + 1 < len(items) and items[i + 1][1] == "tool_result" else None)
            for i, (agent, kind, content, args) in enumerate(items)]


def repetitions() -> list[RuleStep]:
    """FM-1.3 (calls and messages, inside and just beyond the window), FM-2.1 and FM-3.1."""
    rng = random.Random(3)
    said = [_long(rng) for _ in range(LOOKBACK + 10)]
    replies = [f"A short reply: {' '.join(rng.choices(WORDS, k=8))}." for _ in range(8)]
    items = [("user", "message", TASK, None), ("coder", "tool_call", "", '{"cmd": "pytest"}'),
             ("tool", "tool_result", "1 failed", None)]
    for i, text in enumerate(said):
        items.append(("reviewer", "message", text, None))
        if i % 7 == 0:
            items.append(("coder", "message", replies[i // 7], None))
    items += [("reviewer", "message", said[-1].replace(".", "!"), None),  # near-duplicate, in the window
              ("reviewer", "message", said[-LOOKBACK], None),  # exact, just beyond the window
              ("reviewer", "message", said[-LOOKBACK + 2], None),  # exact, the oldest still in the window
              ("coder", "tool_call", "", '{"cmd":  "pytest"}'), ("tool", "tool_result", "1 failed", None),
              ("planner", "message", TASK.replace("test it", "test it."), None),
              ("coder", "message", replies[0], None),
              ("coder", "tool_call", "", '{"cmd": "ls"}')]
    return _steps(items)


def termination() -> list[RuleStep]:
    """FM-1.5: steps after a signal, and a prompt sent again and again."""
    items = [("user", "message", TASK, None)]
    for i in range(30):
        items.append(("coder", "message", f"Working on part {i} of the solution now.", None))
        if i % 9 == 4:
            items.append(("proxy", "message", "Continue. Please keep solving the problem.", None))
        if i == 20:
            items.append(("coder", "message", "def fib(n): ... TERMINATE", None))
    return _steps(items)


def nudges() -> list[RuleStep]:
    """FM-1.5 by a prompt sent again and again, with no termination signal."""
    items = [("user", "message", TASK, None)]
    for i in range(24):
        items.append(("a", "message", f"I need more data for step {i}.", None))
        if i % 6 == 5:
            items.append(("proxy", "message", "Continue. Please keep solving the problem.", None))
    return _steps(items)


def restatements() -> list[RuleStep]:
    """FM-2.1 beyond the ``MAX_CITED`` restatements it cites, and FM-1.5 settled by an early
    signal, with more signals and a prompt sent again and again after it."""
    items = [("user", "message", TASK, None), ("coder", "message", "Nothing to do. TERMINATE", None)]
    for i in range(MAX_CITED + 5):
        items += [("planner", "message", TASK, None), ("coder", "message", f"Working on part {i} now.", None)]
        if i % 10 == 3:
            items.append(("proxy", "message", "Continue. Please keep solving the problem.", None))
        if i % 17 == 0:
            items.append(("coder", "message", "TERMINATE", None))
    return _steps(items)


def turn_limit() -> list[RuleStep]:
    """FM-1.5 by a turn limit, said among the last three steps."""
    items = [("user", "message", TASK, None)] + [("a", "message", f"working {i}", None) for i in range(8)]
    items += [("system", "message", "Stopped: reached the maximum number of turns (20).", None),
              ("a", "message", "ok", None), ("a", "error", "boom", None)]
    return _steps(items)


def _found(steps: list[RuleStep], cuts: list[int]) -> dict[str, tuple[list[int], str] | None]:
    bounds = [0, *cuts, len(steps)]
    parts = [scan_part(steps[a:b], TASK, DETECTORS, None if a == 0 else (lambda a=a: iter(steps[:a])))
             for a, b in zip(bounds, bounds[1:])]
    return {mode: hit and (hit.steps, hit.reason) for mode, (_, hit) in results(parts).items()}


@pytest.mark.parametrize("build", [repetitions, termination, nudges, restatements, turn_limit])
def test_parts_joined_find_what_one_scan_finds(build):
    steps = build()
    whole = {mode: hit and (hit.steps, hit.reason) for mode, (_, hit) in scan(steps, TASK, DETECTORS).items()}
    assert any(whole.values())
    for cut in range(len(steps) + 1):
        assert _found(steps, [cut]) == whole, cut
    rng = random.Random(1)
    for n in (2, 3):
        for _ in range(200):
            assert _found(steps, sorted(rng.choices(range(len(steps) + 1), k=n))) == whole


def test_the_built_runs_find_across_the_window_and_the_seam():
    """What the trajectories above hold, so that the cuts test something: each detector fires,
    and the repeats within the window count while the one from beyond it does not."""
    steps = repetitions()
    found = {mode: hit for mode, (_, hit) in scan(steps, TASK, DETECTORS).items()}
    n = len(steps)
    assert found["FM-1.3"].steps == [n - 8, n - 6, n - 5, n - 2]  # call, near-duplicate, oldest in window, short
    assert found["FM-2.1"].steps == [n - 3] and found["FM-3.1"].steps == [n - 1]
    assert scan(termination(), TASK, DETECTORS)["FM-1.5"][1].reason.startswith("10 step(s) continue")
    assert scan(nudges(), TASK, DETECTORS)["FM-1.5"][1].reason == "the same prompt is sent 4 times instead of ending the run"
    assert scan(turn_limit(), TASK, DETECTORS)["FM-1.5"][1].reason == "the run stopped at a turn or step limit"
    restated = {mode: hit for mode, (_, hit) in scan(restatements(), TASK, DETECTORS).items()}
    assert len(restated["FM-2.1"].steps) == MAX_CITED and restated["FM-2.1"].steps[-1] < len(restatements()) - 10
    assert restated["FM-1.5"].reason.endswith("continue after the termination signal at step 1")
