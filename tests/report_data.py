"""Building small labelled databases with known answers for the report tests."""

from __future__ import annotations

from annotator.models import Label, Step, Trajectory
from annotator.store.labels import add_labels
from annotator.store.review import set_review
from annotator.store.trajectories import save_trajectory
from annotator.taxonomy import load_taxonomy

MODES = load_taxonomy().mode_ids


def add_trajectory(db, tid: str, *, outcome: str = "failure", system: str = "S1", model: str = "M1",
                   steps: int = 10, title: str | None = None, tags: list[str] | None = None,
                   task: str | None = None) -> str:
    save_trajectory(db, Trajectory(
        id=tid, source_format="test", title=title or tid, system=system, model=model, benchmark="B",
        outcome=outcome, content_hash=tid, metadata={"tags": tags} if tags else {}, task=task,
        steps=[Step(index=i, content=f"step {i}") for i in range(steps)],
    ))
    return tid


def label_all(db, tid: str, annotator: str, present: dict[str, int | None] | set[str], *,
              provenance: str = "human", done: bool = True, unknown: tuple[str, ...] = ()) -> None:
    """Give every mode a verdict: present (with onset if given as a dict), unknown, else absent."""
    onsets = present if isinstance(present, dict) else dict.fromkeys(present)
    labels = []
    for mode in MODES:
        verdict = "present" if mode in onsets else "unknown" if mode in unknown else "absent"
        labels.append(Label(trajectory_id=tid, mode_id=mode, annotator=annotator, verdict=verdict,
                            onset_step=onsets.get(mode), provenance=provenance))
    add_labels(db, labels)
    if done:
        set_review(db, tid, annotator, "done")


def known_prevalence_db(db) -> None:
    """20 failed and 10 successful trajectories, labelled by 'alice' with known prevalences.

    failed:     FM-1.1 in 15, FM-2.3 in 10, FM-3.1 in 4, FM-1.3 in 2   (31 mode-presences)
    successful: FM-1.1 in 2,  FM-2.3 in 5,  FM-3.1 in 0, FM-1.3 in 6   (13 mode-presences)
    """
    for i in range(20):
        tid = add_trajectory(db, f"f{i:02d}", outcome="failure", system="S1" if i < 10 else "S2")
        modes = {m: i % 7 for m, k in (("FM-1.1", 15), ("FM-2.3", 10), ("FM-3.1", 4), ("FM-1.3", 2)) if i < k}
        label_all(db, tid, "alice", modes)
    for i in range(10):
        tid = add_trajectory(db, f"s{i:02d}", outcome="success", system="S1" if i < 5 else "S2")
        modes = {m: 3 for m, k in (("FM-1.1", 2), ("FM-2.3", 5), ("FM-1.3", 6)) if i < k}
        label_all(db, tid, "alice", modes)
