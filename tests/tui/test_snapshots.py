"""SVG snapshots of the key screens at a fixed terminal size (update with --snapshot-update)."""

from __future__ import annotations

from annotator.tui.app import make_app

SIZE = (140, 42)


def test_queue(tui_db, snap_compare):
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE)


def test_replay_with_tags_and_suggestions(tui_db, snap_compare):
    async def tag(pilot):
        pilot.app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("R", "j", "j", "3", "j", "v", "j", "j", "j", "e", "j", "j", "s", "k", "k", "k", "k", "k")

    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=tag)


def test_help(tui_db, snap_compare):
    async def help_(pilot):
        pilot.app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("question_mark")

    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=help_)


def test_compare(tui_db, snap_compare):
    async def compare(pilot):
        pilot.app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("R", "j", "j", "e", "j", "1", "C")

    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=compare)
