"""Small trajectories for the pre-labelling tests."""

from __future__ import annotations

from annotator.models import Step, Trajectory
from annotator.store.trajectories import save_trajectory

API_KEY = "sk-test-canary-7f3a9c1e5b"


def make_trajectory(tid: str, contents: list[str], *, task: str = "Add two and two.", **extra) -> Trajectory:
    steps = [
        Step(index=i, agent="user" if i == 0 else ("solver" if i % 2 else "checker"), content=c)
        for i, c in enumerate(contents)
    ]
    return Trajectory(id=tid, source_format="test", task=task, steps=steps, content_hash=tid + str(len(contents)),
                      metadata={"hidden": {"answer": "HIDDEN-ANSWER-4"}}, outcome="failure", **extra)


def add(db, tid: str, contents: list[str], **extra) -> str:
    save_trajectory(db, make_trajectory(tid, contents, **extra))
    return tid
