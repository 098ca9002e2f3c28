"""Importing long coding-agent sessions: a Claude Code session with many sub-agent transcripts
folded in, and a long ``codex exec --json`` stream.

Generates (into ``benchmarks/.data/agent_sessions/``) a Claude Code session of 4,000 lines that
launches 40 sub-agents in parallel pairs, each writing 300 lines to
``<session>/subagents/agent-<id>.jsonl`` (16,000 lines in all), and a ``codex exec`` stream of
5,000 items (20,000 events). Each is imported with ``mast import`` in a child process (peak RSS
from ``wait4``), then imported again (unchanged).

Targets on the 2-core machine: each import ≤ 5 s at ≤ 300 MB peak RSS.
"""

from __future__ import annotations

import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from benchmarks.bench_import import HERE, MAST, run_measured
from benchmarks.targets import Targets

DATA = HERE / ".data" / "agent_sessions"
SID = "bench-session"
MAIN_LINES, SUBAGENTS, SUB_LINES, EXEC_ITEMS = 4_000, 40, 300, 5_000
T0 = datetime(2026, 2, 1, tzinfo=UTC)


def _line(kind: str, n: int, t: float, message: dict, agent: str | None = None, **extra) -> bytes:
    rec = {"type": kind, "uuid": f"u{agent or 'main'}-{n}", "parentUuid": None, "isSidechain": agent is not None,
           "sessionId": SID, "timestamp": (T0 + timedelta(seconds=t)).isoformat(), "message": message, **extra}
    if agent:
        rec["agentId"] = agent
    return orjson.dumps(rec) + b"\n"


def _turn(n: int, t: float, agent: str | None, tag: str) -> list[bytes]:
    """A tool call and its result, in the shape of one split response and its tool_result line."""
    call = f"toolu_{tag}_{n}"
    use = {"id": f"msg_{tag}_{n}", "role": "assistant", "model": "claude-x", "usage": {"input_tokens": 900, "output_tokens": 40},
           "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": f"grep -rn item{n} src/"}}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                           "content": "\n".join(f"src/m{i}.py:{i}: item{n}" for i in range(8))}]}
    return [_line("assistant", 2 * n, t, use, agent), _line("user", 2 * n + 1, t + 0.4, result, agent)]


def make_claude(root: Path) -> Path:
    """The session file; its sub-agent files beside it. Sub-agents run in pairs between two Task calls."""
    session, subs = root / f"{SID}.jsonl", root / SID / "subagents"
    subs.mkdir(parents=True)
    out, t, n = [_line("user", 0, 0, {"role": "user", "content": "Audit the repository."})], 1.0, 1
    per_gap = (MAIN_LINES - 2 * SUBAGENTS) // 2 // (SUBAGENTS // 2)
    for pair in range(SUBAGENTS // 2):
        for _ in range(per_gap):
            out += _turn(n, t, None, "m")
            n, t = n + 1, t + 1
        ids = [f"a{pair:04d}{k}" for k in range(2)]
        for k, agent in enumerate(ids):
            task = {"id": f"msg_task_{pair}", "role": "assistant", "content": [
                {"type": "tool_use", "id": f"toolu_task_{agent}", "name": "Task",
                 "input": {"description": f"part {pair}.{k}", "prompt": f"Audit part {pair}.{k}"}}]}
            out.append(_line("assistant", 100_000 + 2 * pair + k, t, task))
        for k, agent in enumerate(ids):  # the two sub-agents run side by side
            lines = [_line("user", 0, t + 0.1 + k / 10, {"role": "user", "content": f"Audit part {pair}.{k}"}, agent)]
            for j in range(1, SUB_LINES // 2):
                lines += _turn(j, t + j + k / 10, agent, agent)
            (subs / f"agent-{agent}.jsonl").write_bytes(b"".join(lines[:SUB_LINES]))
        t += SUB_LINES // 2 + 1
        for agent in ids:
            result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_task_{agent}",
                                                   "content": "done"}]}
            out.append(_line("user", 200_000 + n, t, result, None, toolUseResult={"agentId": agent}))
            t += 1
    session.write_bytes(b"".join(out))
    return session


def make_exec(path: Path) -> Path:
    events: list[dict] = [{"type": "thread.started", "thread_id": "bench-thread"}, {"type": "turn.started"}]
    for i in range(EXEC_ITEMS // 2):
        cmd = {"id": f"item_{2 * i}", "type": "command_execution", "command": f"rg -n item{i} src",
               "aggregated_output": "", "exit_code": None, "status": "in_progress"}
        events.append({"type": "item.started", "item": cmd})
        done = {**cmd, "aggregated_output": "\n".join(f"src/m{j}.py:{j}: item{i}" for j in range(8)),
                "exit_code": 0, "status": "completed"}
        events.append({"type": "item.completed", "item": done})
        events.append({"type": "item.completed", "item": {"id": f"item_{2 * i + 1}", "type": "reasoning",
                                                          "text": f"**Step {i}**\n\nLook at the next match."}})
        events.append({"type": "item.updated", "item": {"id": "todo", "type": "todo_list", "items": []}})
    events.append({"type": "turn.completed", "usage": {"input_tokens": 10**6, "cached_input_tokens": 9 * 10**5,
                                                       "output_tokens": 10**4}})
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in events))
    return path


def main() -> int:
    targets = Targets()
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir(parents=True)
    session = make_claude(DATA / "claude")
    stream = make_exec(DATA / "exec.jsonl")
    db = DATA / "bench.db"
    sub_files = sorted((DATA / "claude" / SID / "subagents").glob("*.jsonl"))
    sub_mb = sum(f.stat().st_size for f in sub_files) / 1024**2
    for label, path, size in (
        (f"claude session, {MAIN_LINES:,} lines + {len(sub_files)} sub-agent files of {SUB_LINES} lines",
         session, session.stat().st_size / 1024**2 + sub_mb),
        (f"codex exec stream, {EXEC_ITEMS:,} items", stream, stream.stat().st_size / 1024**2),
    ):
        seconds, cpu, rss, out = run_measured([*MAST, "--db", str(db), "import", "-q", str(path)])
        again, again_cpu, _, out_again = run_measured([*MAST, "--db", str(db), "import", "-q", str(path)])
        assert "1 imported" in out and "1 unchanged" in out_again, (out, out_again)
        print(f"{label}: {size:.1f} MB imported in {seconds:.2f} s wall ({cpu:.2f} s CPU), peak RSS {rss:.0f} MB;"
              f" re-import (unchanged) {again:.2f} s wall ({again_cpu:.2f} s CPU)\n  "
              + targets.at_most(f"{label}: import", seconds, 5, " s") + ", "
              + targets.at_most(f"{label}: peak RSS", rss, 300, " MB"))
    return targets.exit_code


if __name__ == "__main__":
    sys.exit(main())
