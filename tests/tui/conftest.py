"""Fixtures for the annotation tests: a small database with one hostile trajectory, a run's suggestions,
a second annotator, and helpers to read what the app shows."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from annotator.models import Label, LabelRun, Step, Trajectory
from annotator.store import labels, open_db, runs
from annotator.store.trajectories import save_trajectory

#: Content a model could write to attack a terminal UI: markup, an action link, ANSI escapes.
HOSTILE = "[bold red]not bold[/] [@click=app.quit]quit[/] \x1b[31mred\x1b[0m \x1b]0;title\x07"

SIZE = (140, 42)


def _steps(n: int) -> list[Step]:
    agents = ["Planner", "Coder", "Tester"]
    out = []
    for i in range(n):
        if i == 3:
            out.append(Step(index=i, agent="Coder", kind="tool_call", tool_name="run_tests", tool_args='{"path": "tests/", "verbose": true}', content=""))
        elif i == 4:
            out.append(Step(index=i, agent="Coder", kind="tool_result", tool_name="run_tests", link=3, content='{"passed": 3, "failed": 1}'))
        elif i == 5:
            out.append(Step(index=i, agent="Tester", kind="message", content=HOSTILE))
        else:
            out.append(Step(index=i, agent=agents[i % 3], kind="message", content=f"step {i} says hello zebra{i}"))
    return out


def trajectory(tid: str, n: int = 12, system: str = "AG2", model: str = "gpt-4o", outcome: str = "failure") -> Trajectory:
    return Trajectory(
        id=tid,
        source_format="test",
        title=f"Task {tid}",
        system=system,
        model=model,
        task="Write a function",
        outcome=outcome,
        content_hash=tid,
        steps=_steps(n),
    )


def build_db(path: Path) -> None:
    """Three trajectories; run 1 suggests FM-1.3 (cites 2, 4) and an ungrounded FM-3.2 on t1; bob tagged t1."""
    db = open_db(path)
    save_trajectory(db, trajectory("t1"))
    save_trajectory(db, trajectory("t2", system="MetaGPT", model="claude", outcome="success"))
    save_trajectory(db, trajectory("t3", n=30))
    run = runs.create_run(db, LabelRun(kind="llm", model="judge-model"))
    labels.add_labels(
        db,
        [
            Label(trajectory_id="t1", mode_id="FM-1.3", annotator=run.annotator, verdict="present", onset_step=2,
                  evidence_steps=[4], confidence=0.8, provenance="llm", run_id=run.id, grounded=True),
            Label(trajectory_id="t1", mode_id="FM-3.2", annotator=run.annotator, verdict="present", onset_step=7,
                  confidence=0.6, provenance="llm", run_id=run.id, grounded=False),
            Label(trajectory_id="t1", mode_id="FM-2.3", annotator="bob", verdict="present", onset_step=6),
        ],
    )
    db.close()


@pytest.fixture
def tui_db(db_path: Path) -> Path:
    build_db(db_path)
    return db_path


def screen_text(app) -> str:
    """The characters on screen, as a user would read them."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


@pytest.fixture
def read_screen():
    return screen_text
