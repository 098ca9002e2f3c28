"""Pilot tests of the queue and compare screens, untrusted content staying inert, attributions and a locked database."""

from __future__ import annotations

import sqlite3

from textual.widgets import DataTable, Input, Select

from annotator.models import Attribution, Step
from annotator.store import labels, open_db, review
from annotator.store.attributions import save_attribution
from annotator.store.trajectories import save_trajectory
from annotator.tui.app import make_app
from annotator.tui.screens.compare import CompareScreen
from annotator.tui.screens.modals import TaskScreen
from annotator.tui.screens.replay import ReplayScreen
from tests.tui.conftest import HOSTILE, trajectory

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


async def test_a_queue_longer_than_its_page_says_so_and_finds_the_next_unfinished_beyond(tui_db, read_screen,
                                                                                         monkeypatch):
    """A queue lists its first rows and says how many match; ``n`` with every listed one done
    opens the first unfinished one beyond them, and a filter narrows to what fits."""
    from annotator.annotating import queue as work

    monkeypatch.setattr(work, "QUEUE_LIMIT", 2)
    app = make_app(tui_db, "alice")
    for tid in ("t1", "t3"):
        review.set_review(app.db, tid, "alice", "done")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        assert table.row_count == 2 and app.queue_ids == ["t1", "t3"]
        assert "showing the first 2 of 3: filter or search for the others" in read_screen(app)
        await pilot.press("n")
        assert isinstance(app.screen, ReplayScreen) and app.screen.session.trajectory_id == "t2"
        await pilot.press("escape")
        app.screen.query_one("#system", Select).value = "MetaGPT"
        await pilot.pause()
        assert table.row_count == 1 and "showing 1" in read_screen(app)


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
        assert "FM-2.3: A onset #2, B onset #6" in read_screen(app)
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


async def test_queue_moves_with_j_k_g_G(tui_db):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        await pilot.press("G")
        assert table.cursor_row == 2
        await pilot.press("g", "enter")
        assert app.screen.session.trajectory_id == "t1"


async def test_a_format_without_system_shows_its_format(db_path, read_screen):
    db = open_db(db_path)
    traj = trajectory("spans", system=None)
    steps = [
        Step(index=0, agent="user", kind="message", content=HOSTILE),
        Step(index=1, agent="bot", kind="tool_call", tool_name="lookup", tool_args='{"q": "x"}', content='lookup({"q": "x"})'),
    ]
    save_trajectory(db, traj.model_copy(update={"source_format": "otel_genai", "task": HOSTILE, "steps": steps}))
    db.close()
    app = make_app(db_path, "alice")
    async with app.run_test(size=SIZE) as pilot:
        assert app.screen.query_one(DataTable).get_row_at(0)[1].plain == "otel_genai"
        screen = app.open_trajectory("spans")
        await pilot.pause()
        await pilot.press("R", "j")
        text = read_screen(app)
        assert "format otel_genai" in text
        assert "task (T) [bold red]not bold[/] [@click=app.quit]quit[/]" in text
        assert "🔧 lookup({\"q\": \"x\"})" in text, "the step list names the tool once"
        assert 'lookup({"q": "x"})' not in text.split("call lookup", 1)[1], "the call's content only restates its arguments"
        await pilot.press("T")
        assert isinstance(app.screen, TaskScreen)
        text = read_screen(app)
        assert "format: otel_genai" in text and "\\x1b[31mred\\x1b[0m" in text and "\x1b" not in text
        await pilot.press("escape")
        assert app.screen is screen


async def test_a_decisive_error_attribution_is_shown_except_in_blind_mode(tui_db, read_screen):
    db = open_db(tui_db)
    save_attribution(db, Attribution(trajectory_id="t2", annotator="who-and-when", step=7, agent="Coder", reason=HOSTILE))
    db.close()
    for blind in (False, True):
        app = make_app(tui_db, "alice", blind=blind)
        async with app.run_test(size=SIZE) as pilot:
            app.open_trajectory("t2")
            await pilot.pause()
            await pilot.press(*["space"] * 6)
            assert "decisive error" not in read_screen(app), "replay mode: not before its step is revealed"
            await pilot.press("space")
            text = read_screen(app)
            if blind:
                assert "decisive error" not in text and "✗" not in text
            else:
                assert "✗ decisive error (who-and-when)" in text and "step 7 · Coder" in text
                assert "✗     7 Coder" in text, "the attributed step is marked in the step list"
                assert "[@click=app.quit]quit[/]" in text


async def test_an_empty_database_says_how_to_fill_it(db_path, read_screen):
    open_db(db_path).close()
    app = make_app(db_path, "alice")
    async with app.run_test(size=SIZE):
        assert "nothing to annotate yet: mast import PATH, or mast annotate PATH" in read_screen(app)


async def test_a_database_locked_by_another_process_is_a_message_not_a_crash(tui_db, read_screen):
    other = sqlite3.connect(tui_db)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        app.db.conn.execute("PRAGMA busy_timeout = 50")
        app.open_trajectory("t1")
        await pilot.pause()
        other.execute("BEGIN IMMEDIATE")
        await pilot.press("1")
        assert "stayed locked by another process" in read_screen(app) and app.is_running
        other.rollback()
        await pilot.press("1")
        assert "tagged FM-1.1 at step 0" in read_screen(app)
        assert labels.current_labels(app.db, "t1", "alice")[0].mode_id == "FM-1.1"
    other.close()
