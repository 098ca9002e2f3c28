"""Precision and recall of each rule detector against human MAST labels.

Reference: the MAD human-labelled sample in ../shared/data/mad_human_sample (real records, three
annotators each; the majority of the three is the reference). The sample is tiny (4 traces),
so every figure here is an anecdote with a wide margin, printed with its counts; a detector is
flagged "worse than useless" when its hits are right less often than the mode's base rate.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from sklearn.metrics import confusion_matrix

from annotator.importers.importing import import_paths
from annotator.labelling.rules import DETECTORS, RulesLabeller
from annotator.store import open_db
from annotator.store.labels import current_labels
from annotator.store.trajectories import get_trajectory, list_trajectories
from annotator.taxonomy import load_taxonomy

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mad_human_sample"
HUMANS = ("mad-human-1", "mad-human-2", "mad-human-3")


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
