"""The rule detectors: precision and recall against human MAST labels, hit rates, and scale.

Reference: the MAD human-labelled sample in ../shared/data/mad_human_sample (real records, three
annotators each; the majority of the three is the reference). The sample is tiny (4 traces),
so every figure here is an anecdote with a wide margin, printed with its counts; a detector is
flagged "worse than useless" when its hits are right less often than the mode's base rate.
How often each detector fires on the Who&When runs is printed beside.

Scale: ``mast prelabel --labeller rules`` as a process of its own over two databases whose steps
are real Who&When messages tiled to size: 1,000 trajectories of 100 steps, and one trajectory of
1,000,000 steps. Targets: at most 5 s and 30 s wall, each at most 500 MB peak memory (PSS, the
proportional set size, summed over the process and the processes it starts: pages the workers
share with the fork server they were forked from count once, not once a process). The databases
are built by this script (plain inserts, not timed). Beside each run: its CPU time, and a floor
measured in the same run (a process that only reads the same steps from the store), since on a
shared machine wall time says as much about the neighbours as about the code. The targets are
checked by ``benchmarks.targets.Targets``: the exit status is 1 when one is missed.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from itertools import cycle, islice
from pathlib import Path

import psutil
from sklearn.metrics import confusion_matrix

from annotator.importers.importing import import_paths
from annotator.labelling.rules import DETECTORS, RulesLabeller
from annotator.store import open_db
from annotator.store.labels import current_labels
from annotator.store.trajectories import get_trajectory, list_trajectories
from annotator.taxonomy import load_taxonomy
from benchmarks.targets import Targets

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DATA = SHARED / "mad_human_sample"
WHO_AND_WHEN = SHARED / "who_and_when"
HUMANS = ("mad-human-1", "mad-human-2", "mad-human-3")


def who_and_when_hits() -> None:
    """How many of the real Who&When runs each detector fires on."""
    tax = load_taxonomy()
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp) / "ww.db")
        import_paths(db, [WHO_AND_WHEN])
        trajs = [get_trajectory(db, t.id) for t in list_trajectories(db)]
        fired = {m: 0 for m in DETECTORS}
        for t in trajs:
            for v in RulesLabeller().verdicts(t, tax):
                fired[v.mode_id] += v.verdict == "present"
        db.close()
    print(f"\nWho&When ({len(trajs)} real failed runs): " + ", ".join(f"{m} fires on {n}" for m, n in fired.items()))


def real_messages() -> list[tuple[str | None, str | None, str, str]]:
    """(agent, role, kind, content) of every Who&When step, in file order."""
    rows = []
    for path in sorted(WHO_AND_WHEN.glob("*.json")):
        for m in json.loads(path.read_text()).get("history", []):
            rows.append((m.get("name") or m.get("role"), m.get("role"), "message", str(m.get("content") or "")))
    return rows


def build(path: Path, n_traj: int, n_steps: int, messages: list) -> None:
    from annotator.store.synthetic import insert_step_rows, insert_trajectory_rows

    db = open_db(path)
    tids = [f"scale-{i:05d}" for i in range(n_traj)]
    insert_trajectory_rows(db, ({"id": t, "schema_version": 1, "source_format": "bench", "task": messages[0][3],
                                 "content_hash": t, "imported_at": "2026-01-01T00:00:00+00:00"} for t in tids))
    source = cycle(messages)
    for t in tids:
        insert_step_rows(db, t, ((i, *m) for i, m in enumerate(islice(source, n_steps))))
    db.close()


@dataclass
class Timed:
    """One process and the processes it starts: wall and CPU seconds (all of them), peak PSS MB
    (their sum, sampled), what it printed."""

    wall: float
    cpu: float
    pss: float
    summary: str


#: The floor: a process that opens the database and reads every step's fields the detectors read,
#: as the rules labeller pages them, and nothing else.
FLOOR = (
    "import sys\n"
    "from annotator.labelling.rules import FIELDS\n"
    "from annotator.store import open_db\n"
    "from annotator.store.steps import iter_step_fields\n"
    "db = open_db(sys.argv[1])\n"
    "for (tid,) in db.execute('SELECT id FROM trajectories').fetchall():\n"
    "    for _ in iter_step_fields(db, tid, FIELDS):\n"
    "        pass\n"
)


def _tree_pss(proc: psutil.Process) -> int:
    """The proportional memory of ``proc`` and of its descendants, bytes (what has gone counts 0)."""
    total = 0
    try:
        tree = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    for p in tree:
        try:
            total += p.memory_full_info().pss
        except psutil.NoSuchProcess:
            pass
    return total


def _become_subreaper() -> None:
    """Make this process the one that reaps its descendants whose parent ends first (Linux's
    PR_SET_CHILD_SUBREAPER): the rules run's fork server and resource tracker outlive it by a
    moment, and the workers' CPU time is in the fork server's, which is lost unless it is waited for."""
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def _reap_orphans(deadline: float) -> float:
    """Wait for the descendants handed to this process (``_become_subreaper``); their CPU seconds,
    each with the processes it waited for."""
    cpu = 0.0
    while time.monotonic() < deadline:
        try:
            pid, _, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.01)
            continue
        cpu += usage.ru_utime + usage.ru_stime
    return cpu


def timed_process(args: list[str]) -> Timed:
    """A Python process of its own (``python ARGS``), timed. Its CPU time includes every process
    it starts (the workers, through the fork server they are forked by, which this process waits
    for when it outlives the run); its memory is the peak of the PSS summed over them, sampled
    every 50 ms (the largest process alone would under-report, RSS summed would count the pages
    the workers share with the fork server once a process)."""
    _become_subreaper()
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watched, peak, done = psutil.Process(proc.pid), [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], _tree_pss(watched))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read()
    done.set()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    sampler.join()
    if status != 0:
        raise SystemExit(f"{args} failed ({status}): {out}")
    cpu = usage.ru_utime + usage.ru_stime + _reap_orphans(time.monotonic() + 30)
    return Timed(wall, cpu, peak[0] / 2**20, " ".join(out.split()))


def load() -> str:
    return "load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


#: (what, trajectories, steps each, target wall seconds); every run's target peak PSS is PSS_MB.
SCALES = (("1,000 trajectories x 100 steps", 1000, 100, 5.0), ("1 trajectory x 1,000,000 steps", 1, 1_000_000, 30.0))
PSS_MB = 500


def scale(targets: Targets) -> None:
    messages = real_messages()
    print(f"\nscale: `mast prelabel --labeller rules`, its own process; steps tiled from {len(messages):,} real"
          " Who&When messages")
    print(f"{'database':<32} {'wall s':>7} {'CPU s':>6} {'us/step':>7} {'PSS MB':>7}  targets")
    with tempfile.TemporaryDirectory() as tmp:
        for name, n_traj, n_steps, target in SCALES:
            path = Path(tmp) / f"{n_traj}x{n_steps}.db"
            build(path, n_traj, n_steps, messages)
            before = load()
            floor = timed_process(["-c", FLOOR, str(path)])
            t = timed_process(["-m", "annotator.cli", "--db", str(path), "prelabel", "--labeller", "rules", "-q"])
            path.unlink()
            print(f"{name:<32} {t.wall:>7.2f} {t.cpu:>6.2f} {t.cpu / (n_traj * n_steps) * 1e6:>7.1f} {t.pss:>7.0f}  "
                  + targets.at_most(f"{name} wall", t.wall, target, " s") + "; "
                  + targets.at_most(f"{name} peak PSS", t.pss, PSS_MB, " MB"))
            print(f"  floor (reading the same steps, nothing else): {floor.wall:.2f} s wall, {floor.cpu:.2f} s CPU;"
                  f" the rules run is {t.cpu / floor.cpu:.1f}x its CPU")
            print(f"  {before} before, {load()} after; {t.summary}", flush=True)


def main() -> int:
    if not DATA.exists():
        print(f"the MAD human sample is missing at {DATA}")
        return 1
    tax = load_taxonomy()
    with tempfile.TemporaryDirectory() as tmp:
        db = open_db(Path(tmp) / "bench.db")
        summary = import_paths(db, [DATA])
        if summary.failed:
            print("import failed:", [f.error for f in summary.failed])
            return 1
        trajs = [get_trajectory(db, t.id) for t in list_trajectories(db)]
        truth: dict[str, dict[str, bool]] = {}
        for t in trajs:
            votes: dict[str, int] = {}
            for lab in current_labels(db, t.id):
                if lab.annotator in HUMANS and lab.verdict == "present":
                    votes[lab.mode_id] = votes.get(lab.mode_id, 0) + 1
            truth[t.id] = {m: votes.get(m, 0) >= 2 for m in tax.mode_ids}
        predicted = {t.id: {v.mode_id: v.verdict == "present" for v in RulesLabeller().verdicts(t, tax)} for t in trajs}
        db.close()
    print(f"reference: majority of 3 human annotators, MAD human sample, {len(trajs)} traces "
          "(tiny: read every figure with its counts)")
    print(f"{'detector':<8} {'TP':>3} {'FP':>3} {'FN':>3} {'TN':>3} {'precision':>10} {'recall':>8} {'base rate':>10}  verdict")
    for mode_id in DETECTORS:
        y = [truth[t.id][mode_id] for t in trajs]
        p = [predicted[t.id][mode_id] for t in trajs]
        tn, fp, fn, tp = confusion_matrix(y, p, labels=[False, True]).ravel()
        precision = tp / (tp + fp) if tp + fp else None
        recall = tp / (tp + fn) if tp + fn else None
        base = sum(y) / len(y)
        if precision is None:
            verdict = "no hits: not measurable here"
        elif precision < base:
            verdict = "WORSE THAN USELESS"
        else:
            verdict = "useful (precision >= base rate)"
        fmt = lambda x: "n/a" if x is None else f"{x:.2f}"  # noqa: E731
        print(f"{mode_id:<8} {tp:>3} {fp:>3} {fn:>3} {tn:>3} {fmt(precision):>10} {fmt(recall):>8} {base:>10.2f}  {verdict}")
    who_and_when_hits()
    targets = Targets()
    scale(targets)
    return targets.exit_code


if __name__ == "__main__":
    sys.exit(main())
