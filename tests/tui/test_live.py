"""What other processes write shows up in an open app on its own, and nothing the user set moves.

Another connection (a second annotator, the same annotator in another window) or a
``mast prelabel`` subprocess writes while the app is open; the test waits for the app's poll
and checks what is shown, and that the cursor, the replay position and any modal stayed put.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from time import monotonic

from textual.widgets import DataTable, Input

from annotator.models import Label, LabelRun, Step, Trajectory
from annotator.store import labels, open_db, review, runs
from annotator.store.trajectories import save_trajectory
from annotator.tui.app import make_app
from annotator.tui.screens.modals import HelpScreen
from annotator.tui.widgets.step_list import StepList
from tests.tui.conftest import SIZE, _steps, trajectory

MAST = Path(sys.executable).with_name("mast")


async def until(pilot, condition, what: str, timeout: float = 15.0) -> None:
    """Let the app run (and poll) until ``condition()`` holds; fail if it never does."""
    deadline = monotonic() + timeout
    while not condition():
        assert monotonic() < deadline, f"never shown: {what}"
        await pilot.pause(0.1)


def _tag(trajectory_id: str, mode_id: str, annotator: str, step: int) -> Label:
    return Label(trajectory_id=trajectory_id, mode_id=mode_id, annotator=annotator, verdict="present", onset_step=step)


def _suggest(db, trajectory_id: str, mode_id: str, step: int) -> None:
    run = runs.create_run(db, LabelRun(kind="llm", model="judge-model"))
    labels.add_labels(db, [Label(trajectory_id=trajectory_id, mode_id=mode_id, annotator=run.annotator,
                                 verdict="present", onset_step=step, confidence=0.9, provenance="llm", run_id=run.id)])


def _unanswered_call(db) -> None:
    """t4 ends on a tool call that never got its result: the rule labeller suggests FM-3.1 there."""
    steps = [*_steps(12), Step(index=12, agent="Coder", kind="tool_call", tool_name="deploy", tool_args="{}")]
    save_trajectory(db, Trajectory(id="t4", source_format="test", title="Task t4", system="AG2", model="gpt-4o",
                                   content_hash="t4", steps=steps))


async def test_replay_shows_another_annotators_tag_and_a_prelabel_run_in_place(tui_db, read_screen):
    other = open_db(tui_db)
    _unanswered_call(other)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        replay = app.open_trajectory("t4")
        await pilot.pause()
        await pilot.press("R", "j", "j", "j")
        step_list = replay.query_one(StepList)
        marks, top = step_list.marks, step_list.scroll_offset.y
        assert "carol" not in read_screen(app)

        labels.add_labels(other, [_tag("t4", "FM-2.1", "carol", 5)])
        await until(pilot, lambda: "others: ● carol @5" in read_screen(app), "carol's tag")
        assert (replay.cursor, step_list.cursor, replay.review_mode) == (3, 3, True)
        assert step_list.marks is marks, "another person's tag marks no step: the list is not redrawn"
        assert step_list.scroll_offset.y == top

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        done = await asyncio.to_thread(
            subprocess.run, [str(MAST), "--db", str(tui_db), "prelabel", "--labeller", "rules", "-q", "t4"],
            capture_output=True, text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        await until(pilot, lambda: step_list.marks.get(12) == "◇", "the run's cited step in the step list")
        assert isinstance(app.screen, HelpScreen), "the open help stays open"
        await pilot.press("escape")
        text = read_screen(app)
        assert "◇ run 2 rules" in text and "→ #12" in text
        assert "others: ● carol @5" in text
        assert (replay.cursor, step_list.cursor) == (3, 3)
    other.close()


async def test_replay_in_replay_mode_keeps_its_position(tui_db, read_screen):
    other = open_db(tui_db)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        replay = app.open_trajectory("t3")
        await pilot.pause()
        await pilot.press("space", "space", "k")
        assert (replay.review_mode, replay.revealed, replay.cursor) == (False, 2, 1)
        labels.add_labels(other, [_tag("t3", "FM-1.2", "bob", 2)])  # an onset already revealed
        await until(pilot, lambda: "others: ● bob @2" in read_screen(app), "bob's tag")
        assert (replay.review_mode, replay.revealed, replay.cursor) == (False, 2, 1)
        assert replay.query_one(StepList).count == 3, "no step is revealed by someone else's write"
    other.close()


async def test_queue_shows_progress_statuses_suggestions_and_imports_of_other_processes(tui_db, read_screen):
    other = open_db(tui_db)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        await pilot.press("down", "down")
        assert table.cursor_row == 2 and table.get_row("t3")[-1].plain == ""
        assert "0/3 done" in read_screen(app)

        _suggest(other, "t3", "FM-1.1", 4)
        review.set_review(other, "t2", "alice", "done")  # alice finishing t2 in another window
        await until(pilot, lambda: "Queue of alice   1/3 done" in read_screen(app), "the progress")
        assert table.get_row("t3")[-1].plain == "1", "t3 now has a suggestion waiting"
        assert table.get_row("t2")[-2].plain == "done"
        assert table.cursor_row == 2

        under = table.get_row_at(2)[0].plain
        save_trajectory(other, trajectory("t0"))  # an import by someone else
        await until(pilot, lambda: "showing 4" in read_screen(app), "the imported trajectory")
        assert "1/4 done" in read_screen(app)
        assert table.cursor_row == 3, "t0 is listed first"
        assert table.get_row_at(table.cursor_row)[0].plain == under, "the cursor stays on its trajectory"

        await pilot.press("slash", *"zebra25")
        await until(pilot, lambda: "showing 1" in read_screen(app), "the search, as typed")
        save_trajectory(other, trajectory("t5"))
        await until(pilot, lambda: "1/5 done" in read_screen(app), "the second import")
        assert "showing 1" in read_screen(app), "the search stays applied over the import"
        search = app.screen.query_one("#search", Input)
        assert search.has_focus and search.value == "zebra25", "the search being typed keeps its focus and text"
    other.close()


async def test_blind_mode_shows_nothing_of_others_written_meanwhile(tui_db, read_screen):
    other = open_db(tui_db)
    app = make_app(tui_db, "alice", blind=True)
    async with app.run_test(size=SIZE) as pilot:
        assert "suggested" not in read_screen(app)
        review.set_review(other, "t2", "alice", "done")
        _suggest(other, "t3", "FM-1.1", 4)
        await until(pilot, lambda: "1/3 done" in read_screen(app), "alice's own progress")
        assert "suggested" not in read_screen(app)

        replay = app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("R", "j", "j")
        labels.add_labels(other, [_tag("t1", "FM-1.1", "carol", 4), _tag("t1", "FM-1.4", "alice", 2)])
        _suggest(other, "t1", "FM-1.2", 5)
        await until(pilot, lambda: "● @2" in read_screen(app), "alice's own tag from her other window")
        text = read_screen(app)
        assert "carol" not in text and "bob" not in text and "others:" not in text and "◇" not in text
        assert replay.cursor == 2 and "◇" not in replay.query_one(StepList).marks.values()
    other.close()
