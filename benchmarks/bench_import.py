"""Import throughput, peak memory and the first screen of a long trajectory.

Generates (once, into ``benchmarks/.data/``) a synthetic corpus shaped like MAD's
``MAD_full_dataset.json`` — 1,642 records, about 66 MB, ``trace.trajectory`` as raw log text
in the styles of the seven MAST systems — and one 10,000-step chat trajectory with a few
multi-megabyte tool outputs. Then runs ``mast import`` on each in a child process (peak RSS
from ``wait4``) and times ``mast show ID --limit 40`` until its first output.

Targets on the 2-core machine: corpus ≤ 10 s at ≤ 300 MB peak RSS; first screen ≤ 0.5 s. And
against a floor measured in the same run on the same corpus (:func:`floor`: what any import of
it must do, the parse, the compressed raw copies, the same rows and index written in one
transaction): import ≤ 2x the floor, unchanged re-import ≤ 0.5x.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

import orjson

from benchmarks.targets import Targets

HERE = Path(__file__).resolve().parent
DATA = HERE / ".data"
MAST = [sys.executable, "-m", "annotator.cli"]

#: Records per system, as in MAD (paper v3 Table 1).
SYSTEMS = {"AG2": 597, "MetaGPT": 430, "ChatDev": 330, "Magentic-One": 195, "OpenManus": 30, "AppWorld": 30,
           "HyperAgent": 30}
MODELS = ["GPT-4o", "Claude-3.7-Sonnet", "Qwen2.5-Coder-32B-Instruct", "CodeLlama-7b-Instruct-hf", "GPT-4o-mini"]
BENCHMARKS = {"AG2": "GSMPlus", "MetaGPT": "ProgramDev-v2", "ChatDev": "ProgramDev-v2", "Magentic-One": "GAIA",
              "OpenManus": "ProgramDev", "AppWorld": "Test-C", "HyperAgent": "SWE-Bench Lite"}
TARGET_BYTES = 66 * 1024 * 1024
LONG_STEPS = 10_000

WORDS = ("the agent checks result file function test value error list update call plan answer verify "
         "output input request code review step task user data number string return import class").split()


def _prose(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _turn(system: str, rng: random.Random, k: int) -> str:
    text = _prose(rng, rng.randint(40, 400))
    code = "\n".join(f"    x{i} = compute({i}, '{rng.choice(WORDS)}')" for i in range(rng.randint(2, 30)))
    if system == "ChatDev":
        a, b = rng.sample(["Chief Executive Officer", "Chief Product Officer", "Programmer", "Code Reviewer"], 2)
        return (f"[2023-25-08 10:{k % 60:02d}:{k % 60:02d} INFO] {a}: **{a}<->{b} on : Coding, turn {k}**\n\n"
                f"{text}\n```python\n{code}\n```\n\n[2023-25-08 10:00:00 INFO] **[OpenAI_Usage_Info Receive]**\n"
                f"prompt_tokens: {rng.randint(100, 4000)}\n\n")
    if system == "MetaGPT":
        who = rng.choice(["SimpleCoder", "SimpleTester", "SimpleReviewer"])
        return f"[2025-03-27 01:21:{k % 60:02d}] NEW MESSAGES:\n\n{who}: \n{text}\n{code}\n{'-' * 80}\n\n"
    if system == "AG2":
        a, b = ("mathproxyagent", "assistant") if k % 2 == 0 else ("assistant", "mathproxyagent")
        return f"{a} (to {b}):\n\n{text}\n```python\n{code}\n```\n\n{'-' * 80}\n"
    if system == "Magentic-One":
        who = rng.choice(["Orchestrator (thought)", "Orchestrator (-> WebSurfer)", "WebSurfer", "Coder"])
        return f"{'-' * 75}\n[2024-10-21T15:32:{k % 60:02d}.123456], {who}:\n\n{text}\n"
    if system == "OpenManus":
        return (f"2025-03-10 12:00:{k % 60:02d}.124 | INFO     | app.agent.base:run:140 - Executing step {k}/50\n"
                f"2025-03-10 12:00:{k % 60:02d}.456 | INFO     | app.agent.toolcall:think:53 - ✨ Manus's thoughts: {text}\n"
                f"2025-03-10 12:00:{k % 60:02d}.458 | INFO     | app.agent.toolcall:execute_tool:140 - 🔧 Activating tool: 'python_execute'...\n"
                f"2025-03-10 12:00:{k % 60:02d}.900 | INFO     | app.agent.toolcall:act:113 - 🎯 Tool 'python_execute' completed its mission! Result: {code}\n")
    if system == "AppWorld":
        who = rng.choice(["Supervisor", "Spotify", "Venmo"])
        return f"Response from {who} Agent\n{text}\n{code}\n\nMessage to Supervisor Agent\n{_prose(rng, 30)}\n\n"
    return (f"HyperAgent_astropy__astropy-12907 - INFO - Planner's Response: Thought: {text}\n"
            f"Intern Name: Codebase Navigator\nSubgoal: {_prose(rng, 20)}\n"
            f"HyperAgent_astropy__astropy-12907 - INFO - Inner-Navigator-Assistant's Response: {code}\n")


def _record(system: str, n: int, rng: random.Random, size: int) -> dict:
    parts: list[str] = []
    if system == "AppWorld":
        parts.append(f"{'*' * 50} Task {n % 30 + 1}/30 (task_{n}) {'*' * 50}\n")
    total, k = 0, 0
    while total < size:
        turn = _turn(system, rng, k)
        parts.append(turn)
        total += len(turn)
        k += 1
    if system == "AppWorld":
        parts.append(orjson.dumps({"success": rng.random() < 0.3, "num_tests": 3}).decode())
    return {"mas_name": system, "llm_name": rng.choice(MODELS), "benchmark_name": BENCHMARKS[system],
            "trace_id": n % 200, "trace": {"trajectory": "".join(parts)},
            "mast_annotation": {f"{c}.{m}": int(rng.random() < 0.2) for c, ms in ((1, 5), (2, 6), (3, 3))
                                for m in range(1, ms + 1)}}


def make_corpus(path: Path) -> None:
    rng = random.Random(1642)
    per_record = TARGET_BYTES // sum(SYSTEMS.values())
    with path.open("wb") as fh:
        fh.write(b"[")
        first = True
        for system, count in SYSTEMS.items():
            for n in range(count):
                size = int(per_record * rng.uniform(0.3, 1.7))
                fh.write((b"" if first else b",\n") + orjson.dumps(_record(system, n, rng, size)))
                first = False
        fh.write(b"]\n")


def make_long(path: Path) -> None:
    rng = random.Random(10_000)
    messages: list[dict] = [{"role": "system", "content": "You are a coding agent."},
                            {"role": "user", "content": "Fix the failing test in the repository."}]
    call = 0
    while len(messages) < LONG_STEPS:
        call += 1
        big = call % 1000 == 0
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{call}", "type": "function",
             "function": {"name": "bash", "arguments": orjson.dumps({"cmd": f"grep -rn x{call} src/"}).decode()}}]})
        output = ("\n".join(f"src/file{i}.py:{i}: x{call} = {_prose(rng, 6)}" for i in range(40000)) if big
                  else _prose(rng, rng.randint(10, 120)))
        messages.append({"role": "tool", "tool_call_id": f"call_{call}", "name": "bash", "content": output})
    path.write_bytes(orjson.dumps({"id": "long-run", "model": "gpt-4o", "messages": messages[:LONG_STEPS]}))


def generate(make, path: Path) -> None:
    """``make(path)`` in a fresh interpreter of its own. Linux keeps, as a child's peak RSS, the
    larger of its own and its parent's at the time it started, so an input built in this
    process (hundreds of MB of text) would be counted in every import measured after it."""
    child = multiprocessing.get_context("spawn").Process(target=make, args=(path,))
    child.start()
    child.join()
    if child.exitcode:
        raise SystemExit(f"generating {path.name} failed (exit {child.exitcode})")


def run_measured(args: list[str]) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout) of one child process that must succeed."""
    seconds, cpu, rss, out, err, code = _measure(args)
    if code != 0:
        raise SystemExit(f"{' '.join(args)} failed ({code}):\n{err}")
    return seconds, cpu, rss, out


def run_measured_any(args: list[str]) -> tuple[float, float, float, str, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout, stderr) of one child process, whatever its exit."""
    return _measure(args)[:5]


def _measure(args: list[str]) -> tuple[float, float, float, str, str, int]:
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:  # a file, so a chatty stderr cannot block the child
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, cwd=HERE.parent)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        err.seek(0)
        return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.decode(),
                err.read().decode(errors="replace"), proc.returncode)


def first_output(args: list[str]) -> tuple[float, float, float]:
    """(seconds to the first byte of output, seconds to the end, CPU seconds) of a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=HERE.parent)
    proc.stdout.read(1)
    first = time.perf_counter() - start
    proc.stdout.read()
    _, _, usage = os.wait4(proc.pid, 0)
    return first, time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> int:
    DATA.mkdir(exist_ok=True)
    corpus, long = DATA / "mad_full_synthetic.json", DATA / "long_10000_steps.json"
    if not corpus.exists():
        print("generating the synthetic MAD corpus ...", flush=True)
        generate(make_corpus, corpus)
    if not long.exists():
        print("generating the 10,000-step trajectory ...", flush=True)
        generate(make_long, long)
    db = DATA / "bench.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    mb = corpus.stat().st_size / 1024**2

    targets = Targets()
    print(f"load average before the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
          " (wall-clock figures grow with other load; CPU time does not)")
    seconds, cpu, rss, out = run_measured([*MAST, "--db", str(db), "import", "-q", str(corpus)])
    print(out.strip())
    n = sum(SYSTEMS.values())
    print(f"corpus: {mb:.1f} MB, {n} trajectories in {seconds:.2f} s wall ({cpu:.2f} s CPU)"
          f" = {mb / seconds:.1f} MB/s, {n / seconds:.0f} trajectories/s;"
          f" peak RSS {rss:.0f} MB ({targets.at_most('corpus import', seconds, 10, ' s')},"
          f" {targets.at_most('corpus peak RSS', rss, 300, ' MB')})")
    again, again_cpu, _, _ = run_measured([*MAST, "--db", str(db), "import", "-q", str(corpus)])
    print(f"re-import (all unchanged): {again:.2f} s wall ({again_cpu:.2f} s CPU)")
    _, _, _, said = run_measured([sys.executable, "-m", "benchmarks.bench_import", "floor", str(corpus), str(db)])
    floor, floor_cpu = orjson.loads(said)
    print(f"floor (orjson parse, the same trajectory and step rows by executemany in one transaction, the"
          f" full-text index, the raw records compressed): {floor:.2f} s wall ({floor_cpu:.2f} s CPU)")
    print(f"import / floor: {seconds / floor:.2f}x wall, {cpu / floor_cpu:.2f}x CPU"
          f" ({targets.at_most('import / floor (CPU)', cpu / floor_cpu, 2, 'x')});"
          f" re-import / floor: {again / floor:.2f}x wall, {again_cpu / floor_cpu:.2f}x CPU"
          f" ({targets.at_most('re-import / floor (CPU)', again_cpu / floor_cpu, 0.5, 'x')})")
    print(f"load average after: {os.getloadavg()[0]:.1f}")

    long_mb = long.stat().st_size / 1024**2
    seconds, cpu, rss, _ = run_measured([*MAST, "--db", str(db), "import", "-q", str(long)])
    print(f"long trajectory: {long_mb:.1f} MB, {LONG_STEPS:,} steps imported in {seconds:.2f} s wall"
          f" ({cpu:.2f} s CPU); peak RSS {rss:.0f} MB")

    listing = subprocess.run([*MAST, "--db", str(db), "list", "--format", "openai_chat", "--json"],
                             capture_output=True, cwd=HERE.parent, check=True).stdout
    traj_id = orjson.loads(listing.splitlines()[0])["id"]
    shows = sorted(first_output([*MAST, "--db", str(db), "show", traj_id, "--limit", "40"]) for _ in range(5))
    first, done, cpu = shows[len(shows) // 2]
    print(f"mast show --limit 40 on the long trajectory (median of 5): first output after {first:.3f} s,"
          f" done after {done:.3f} s, {cpu:.3f} s CPU; best first output {shows[0][0]:.3f} s"
          f" ({targets.at_most('first screen', first, 0.5, ' s')})")
    print(f"database: {db.stat().st_size / 1024**2:.0f} MB")
    return targets.exit_code


def floor(corpus: Path, imported: Path) -> tuple[float, float]:
    """(wall, CPU seconds) of the least an import of ``corpus`` must do, with the rows the
    importer wrote into ``imported`` taken as given (read before the clock starts): parse the
    file with orjson, compress each record as the importer keeps it, insert the trajectory and
    step rows with executemany in one transaction into a fresh store, build the full-text index."""
    from annotator.store.db import open_db
    from annotator.store.trajectories import RAW_COMPRESSION

    source = open_db(imported)
    cols = [r[1] for r in source.execute("PRAGMA table_info(trajectories)") if r[1] not in ("raw", "pending")]
    trajectories = source.execute(
        f"SELECT {', '.join(cols)} FROM trajectories ORDER BY CAST(substr(source_ref, 8) AS INTEGER)").fetchall()
    step_cols = [r[1] for r in source.execute("PRAGMA table_info(steps)")]
    steps = source.execute(f"SELECT {', '.join(step_cols)} FROM steps").fetchall()
    source.conn.close()
    target = DATA / "floor.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    db = open_db(target)
    insert_trajectory = (f"INSERT INTO trajectories ({', '.join(cols)}, raw)"
                         f" VALUES ({', '.join('?' for _ in cols)}, ?)")
    insert_step = f"INSERT INTO steps ({', '.join(step_cols)}) VALUES ({', '.join('?' for _ in step_cols)})"
    start, start_cpu = time.perf_counter(), time.process_time()
    records = orjson.loads(corpus.read_bytes())
    raws = [zlib.compress(orjson.dumps(rec), RAW_COMPRESSION) for rec in records]
    db.conn.execute("BEGIN IMMEDIATE")
    db.conn.executemany(insert_trajectory, [(*row, raw) for row, raw in zip(trajectories, raws, strict=True)])
    db.conn.executemany(insert_step, steps)
    db.conn.execute("INSERT INTO steps_fts(rowid, content) SELECT rowid, content FROM steps")
    db.conn.commit()
    return time.perf_counter() - start, time.process_time() - start_cpu


if __name__ == "__main__":
    if sys.argv[1:2] == ["floor"]:
        print(orjson.dumps(floor(Path(sys.argv[2]), Path(sys.argv[3]))).decode())
    else:
        sys.exit(main())
