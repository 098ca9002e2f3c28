"""A simulated study for the README's walkthrough: a judge labels 5,000 trajectories, people audit 200.

Nothing here is real data. ``corpus`` writes N synthetic trajectories (JSON Lines, the generic
``jsonl`` import format) with a hidden true set of failure modes each, drawn with the prevalences
of ``benchmarks/bench_ppi.py`` (higher in failed runs), and a judge's verdicts made from the truth
with that module's known per-mode sensitivity and false-positive rate. The judge's verdicts are
written into the trajectories as ``JUDGE:FM-x.y`` markers, which the project's local test server
(``python -m tests.openai_server``) answers as "present", so ``mast prelabel`` against it is a real
run of the judge code with a judge of known error rates. ``labels`` writes stand-in human labels
(the truth) for the trajectories of an audit sample, in the ``mast export`` JSON Lines format that
``mast import`` restores, as if a person had labelled them blind.

    python -m examples.judge_audit corpus -n 5000 -o corpus.jsonl --truth truth.jsonl
    python -m examples.judge_audit labels --truth truth.jsonl --sample sample.jsonl -o alice.jsonl
    python -m examples.judge_audit truth --truth truth.jsonl
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import orjson

from benchmarks.bench_ppi import FALSE_POSITIVE, MODES, PREVALENCE, SENSITIVITY

SYSTEMS = ("AG2", "MetaGPT", "ChatDev")
#: Share of failed runs, and how much more (less) often a mode shows in a failed (successful) run.
FAILED_SHARE, IN_FAILED, IN_SUCCEEDED = 0.6, 1.4, 0.4


def corpus(n: int, seed: int, out: str, truth_path: str) -> None:
    rng = np.random.default_rng(seed)
    failed = rng.random(n) < FAILED_SHARE
    rate = PREVALENCE * np.where(failed[:, None], IN_FAILED, IN_SUCCEEDED)
    truth = rng.random((n, len(MODES))) < rate
    u = rng.random(truth.shape)
    judge = np.where(truth, u < SENSITIVITY, u < FALSE_POSITIVE)
    systems = rng.choice(len(SYSTEMS), n)
    with open(out, "wb") as fh, open(truth_path, "wb") as tf:
        for i in range(n):
            tid = f"sim-{i:05d}"
            markers = " ".join(f"JUDGE:{MODES[j]}" for j in np.flatnonzero(judge[i]))
            record = {
                "id": tid, "title": f"simulated run {i}", "system": SYSTEMS[systems[i]], "model": "sim-model",
                "benchmark": "simulated", "outcome": "failure" if failed[i] else "success",
                "messages": [
                    {"role": "user", "content": f"ID:{tid} Simulated task {i}."},
                    {"role": "assistant", "content": f"Simulated work. Judge markers: {markers or 'none'}"},
                    {"role": "assistant", "content": "Done."},
                ],
            }
            fh.write(orjson.dumps(record) + b"\n")
            tf.write(orjson.dumps({"title": record["title"], "modes": [MODES[j] for j in np.flatnonzero(truth[i])]})
                     + b"\n")


def labels(truth_path: str, sample_path: str, annotator: str, out: str) -> None:
    """The database gives each imported trajectory its own id; the title joins it to the truth."""
    with open(truth_path, "rb") as fh:
        truth = {r["title"]: set(r["modes"]) for r in map(orjson.loads, fh)}
    with open(sample_path, "rb") as fh:
        chosen = [orjson.loads(line) for line in fh if line.strip()]
    with open(out, "wb") as fh:
        for row in chosen:
            for mode in MODES:
                fh.write(orjson.dumps({
                    "format": "mast-labels", "trajectory_id": row["id"], "source": annotator, "mode_id": mode,
                    "verdict": "present" if mode in truth[row["title"]] else "absent", "provenance": "human",
                }) + b"\n")


def prevalence(truth_path: str) -> None:
    """Print the true prevalence per mode: what the corrected estimates should find."""
    with open(truth_path, "rb") as fh:
        rows = [set(orjson.loads(line)["modes"]) for line in fh]
    print(f"true prevalence over {len(rows)} trajectories:")
    for mode in MODES:
        print(f"  {mode}  {sum(mode in r for r in rows) / len(rows):.3f}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("corpus", help="synthetic trajectories with a hidden truth and a judge's markers")
    c.add_argument("-n", type=int, default=5000)
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("-o", "--output", required=True)
    c.add_argument("--truth", required=True)
    lab = sub.add_parser("labels", help="stand-in human labels (the truth) for an audit sample")
    lab.add_argument("--truth", required=True)
    lab.add_argument("--sample", required=True, help="`mast list --tag TAG --json` output")
    lab.add_argument("--annotator", default="alice")
    lab.add_argument("-o", "--output", required=True)
    truth = sub.add_parser("truth", help="the true prevalence per mode (known because simulated)")
    truth.add_argument("--truth", required=True)
    args = parser.parse_args(argv)
    if args.command == "corpus":
        corpus(args.n, args.seed, args.output, args.truth)
    elif args.command == "truth":
        prevalence(args.truth)
    else:
        labels(args.truth, args.sample, args.annotator, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
