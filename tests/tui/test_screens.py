"""Pilot tests of the queue and compare screens, and of untrusted content staying inert."""

from __future__ import annotations

from textual.widgets import DataTable, Input, Select

from annotator.store import labels, review
from annotator.tui.app import make_app
from annotator.tui.screens.compare import CompareScreen
from annotator.tui.screens.replay import ReplayScreen

SIZE = (140, 42)


async def test_queue_lists_filters_searches_and_opens(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        text = read_screen(app)
        assert "Queue of alice   0/3 done, 0 in progress (0%)" in text
        assert "Task t1" in text and "failure" in text and "success" in text
        table = app.screen.query_one(DataTable)
        assert table.row_count == 3
        assert table.get_row_at(0)[-1].plain == "2", "t1 has two suggestions waiting"
        app.screen.query_one("#system", Select).value = "MetaGPT"
        await pilot.pause()
        assert table.row_count == 1 and "Task t2" in read_screen(app)
        app.screen.query_one("#system", Select).clear()
        await pilot.pause()
        await pilot.press("slash", *"zebra25", "enter")
        assert table.row_count == 1 and table.get_row_at(0)[0].plain == "Task t3"
        app.screen.query_one("#search", Input).value = ""
        await pilot.press("slash", "enter")
        assert table.row_count == 3
        await pilot.press("down", "down", "enter")
        assert isinstance(app.screen, ReplayScreen) and app.screen.session.trajectory_id == "t2"
        await pilot.press("space", "1", "escape")
        assert "1 in progress" in read_screen(app) and "in progress" in table.get_row_at(2)[-2].plain
        app.screen.query_one("#status", Select).value = "in_progress"
        await pilot.pause()
        assert table.row_count == 1


async def test_queue_next_unfinished(tui_db):
    app = make_app(tui_db, "alice")
    review.set_review(app.db, "t1", "alice", "done")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        assert app.screen.session.trajectory_id == "t3"


async def test_compare_lists_disagreements_and_jumps_to_both_onsets(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("R", "j", "j", "e")
        await pilot.press("C")
        assert isinstance(app.screen, CompareScreen)
        text = read_screen(app)
        assert "0 disagreements between alice and bob" not in text
        assert "1 disagreements between alice and bob" in text
        assert "FM-2.3" in text and "present @2" in text and "present @6" in text
        app.screen.query_one("#right", Select).value = "run:1"
        await pilot.pause()
        assert "3 disagreements between alice and run:1" in read_screen(app)
        app.screen.query_one("#right", Select).value = "bob"
        await pilot.pause()
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.cursor == 2
        assert "FM-2.3: A onset 2, B onset 6" in read_screen(app)
        await pilot.press("o")
        assert screen.cursor == 6
        await pilot.press("o")
        assert screen.cursor == 2


async def test_hostile_content_is_shown_literally_and_does_nothing(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("R")
        for _ in range(5):
            await pilot.press("j")
        await pilot.pause()
        assert screen.cursor == 5
        text = read_screen(app)
        assert "[bold red]not bold[/] [@click=app.quit]quit[/] \\x1b[31mred\\x1b[0m" in text
        assert "\\x1b]0;title\\x07" in text
        assert "\x1b" not in text
        await pilot.click("#step-view", offset=(12, 2))
        await pilot.pause()
        assert app.is_running and app.screen is screen
        assert labels.current_labels(app.db, "t1", "alice") == []
