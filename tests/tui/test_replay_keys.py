"""Pilot tests of the replay screen: every key, checked on the database and on the screen."""

from __future__ import annotations

from annotator.store import labels, review
from annotator.tui.app import make_app
from annotator.tui.screens.replay import ReplayScreen
from annotator.tui.widgets.step_list import StepList
from annotator.tui.widgets.step_view import StepView

SIZE = (140, 42)


async def _open(pilot, tid: str = "t1") -> ReplayScreen:
    pilot.app.open_trajectory(tid)
    await pilot.pause()
    return pilot.app.screen


def _current(app, tid: str = "t1"):
    return {lab.mode_id: lab for lab in labels.current_labels(app.db, tid, app.annotator)}


async def test_navigation_keys_move_the_cursor(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        assert screen.cursor == 0 and screen.query_one(StepList).count == 1
        await pilot.press("space", "space", "space")
        assert screen.cursor == 3 and screen.query_one(StepList).count == 4
        assert "🔧 call run_tests" in read_screen(app)
        assert '"verbose": true' in read_screen(app)
        await pilot.press("j")
        assert screen.cursor == 3, "replay mode: j does not go beyond the revealed steps"
        await pilot.press("k", "up")
        assert screen.cursor == 1
        await pilot.press("down", "j")
        assert screen.cursor == 3
        await pilot.press("g")
        assert screen.cursor == 0
        await pilot.press("G")
        assert screen.cursor == 3
        await pilot.press("R")
        assert "[REVIEW]" in read_screen(app) and screen.query_one(StepList).count == 12
        await pilot.press("G")
        assert screen.cursor == 11
        assert "step 11 says hello zebra11" in read_screen(app)
        await pilot.press("R")
        assert "[REPLAY]" in read_screen(app)


async def test_tag_move_untag_and_undo(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await pilot.press("R", "j", "j", "3")
        assert _current(app)["FM-1.3"].onset_step == 2
        assert "● @2" in read_screen(app)
        assert "tagged FM-1.3 at step 2" in read_screen(app)
        await pilot.press("j", "j", "3")
        assert _current(app)["FM-1.3"].onset_step == 4
        assert "moved onset of FM-1.3 at step 4" in read_screen(app)
        await pilot.press("3")
        assert "FM-1.3" not in _current(app)
        await pilot.press("u")
        assert _current(app)["FM-1.3"].onset_step == 4
        await pilot.press("u")
        assert _current(app)["FM-1.3"].onset_step == 2
        assert "undone" in read_screen(app)
        for key in "12345qwertyasd":
            await pilot.press(key)
        assert len(_current(app)) == 14
        assert screen.mode_cursor == 13
        assert review.get_review(app.db, "t1", "alice").status == "in_progress"


async def test_evidence_note_quote_and_definition(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await pilot.press("R", "j", "e", "j", "v")
        assert _current(app)["FM-2.3"].evidence_steps == [2]
        assert "● @1 +2" in read_screen(app)
        assert screen.query_one(StepList).marks == {1: "●", 2: "+", 4: "◇", 7: "◇"}
        await pilot.press("N")
        await pilot.press(*"lost track")
        await pilot.press("enter")
        assert _current(app)["FM-2.3"].note == "lost track"
        await pilot.press("Q")
        await pilot.press(*"zebra2")
        await pilot.press("enter")
        assert _current(app)["FM-2.3"].quote == "zebra2"
        assert '"zebra2" · note: lost track' in read_screen(app)
        await pilot.press("i")
        assert "Task derailment" in read_screen(app) and "esc closes" in read_screen(app)
        await pilot.press("escape")
        await pilot.press("right_square_bracket")
        assert screen.taxonomy.modes[screen.mode_cursor].id == "FM-2.4"
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert screen.taxonomy.modes[screen.mode_cursor].id == "FM-2.2"
        await pilot.press("N", "x", "enter")
        assert "FM-2.2 is not tagged: tag it first" in read_screen(app)


async def test_done_confirms_and_records_absent(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot)
        await pilot.press("space", "a", "D")
        text = read_screen(app)
        assert "Mark this trajectory done?" in text and "FM-3.1 Premature termination at step 1" in text
        assert "13 untagged modes will be recorded as absent" in text
        await pilot.press("escape")
        assert review.get_review(app.db, "t1", "alice").status == "in_progress"
        await pilot.press("D", "y")
        current = _current(app)
        assert len(current) == 14 and sum(lab.verdict == "absent" for lab in current.values()) == 13
        assert review.get_review(app.db, "t1", "alice").status == "done"
        assert "marked done" in read_screen(app)


async def test_done_lists_a_tag_made_under_another_codebook_by_its_id(tui_db, read_screen):
    """A mode the codebook in use does not have (a label made under another) is named by its id."""
    from annotator.models import Label
    from annotator.store import open_db

    db = open_db(tui_db)
    labels.add_labels(db, [Label(trajectory_id="t1", mode_id="XY-9.9", annotator="alice", verdict="present", onset_step=2)])
    db.close()
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await _open(pilot)
        await pilot.press("D")
        await pilot.pause()
        assert "XY-9.9 (not in this codebook) at step 2" in read_screen(app)
        await pilot.press("y")
        await pilot.pause()
        assert app.is_running and review.get_review(app.db, "t1", "alice").status == "done"


async def test_suggestions_accept_reject_and_jump(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        text = read_screen(app)
        assert "◇" not in text and "bob" not in text, "replay mode at step 0: nothing cites a step ahead"
        await pilot.press("space", "space")
        text = read_screen(app)
        assert "◇ run 1 llm 0.80" not in text, "it cites step 4, not revealed yet"
        await pilot.press("space", "space", "space", "space", "space", "space")
        text = read_screen(app)
        assert "◇ run 1 llm 0.80 → #2 #4" in text and "others: ● bob @6" in text and "0.60 → #7" in text
        await pilot.press("R", "g")
        text = read_screen(app)
        assert "◇ run 1 llm 0.80 → #2 #4" in text
        assert "◇ run 1 llm 0.60 → #7 ⚠ ungrounded" in text
        assert "others: ● bob @6" in text
        await pilot.press("3")
        await pilot.press("u")
        await pilot.press("o")
        assert screen.cursor == 2
        await pilot.press("o")
        assert screen.cursor == 4
        await pilot.press("A")
        lab = _current(app)["FM-1.3"]
        assert (lab.provenance, lab.run_id) == ("accepted", 1)
        assert "accepted from run 1" in read_screen(app)
        await pilot.press("A")
        assert "already accepted" in read_screen(app)
        await pilot.press("X")
        assert "FM-1.3" not in _current(app), "rejecting an accepted suggestion clears its label"
        assert "[rejected]" in read_screen(app)
        await pilot.press("u")
        assert _current(app)["FM-1.3"].provenance == "accepted"
        assert "undone: rejected FM-1.3" in read_screen(app) and "[accepted]" in read_screen(app)
        await pilot.press("s", "X")
        assert "rejected the suggestion of run:1 on FM-3.2" in read_screen(app)
        assert labels.suggestion_decisions(app.db, "t1", "alice")


async def test_blind_mode_hides_suggestions_others_and_outcome(tui_db, read_screen):
    app = make_app(tui_db, "alice", blind=True)
    async with app.run_test(size=SIZE) as pilot:
        assert "outcome" not in read_screen(app) and "failure" not in read_screen(app)
        await _open(pilot)
        text = read_screen(app)
        assert "◇" not in text and "bob" not in text and "failure" not in text and "[BLIND]" in text
        await pilot.press("s", "A")
        assert "suggestions are hidden in blind mode" in read_screen(app)
        assert labels.suggestion_decisions(app.db, "t1", "alice") == {}
        assert _current(app)["FM-3.2"].provenance == "human"
        await pilot.press("C")
        assert "compare is not available in blind mode" in read_screen(app)


async def test_search_within_the_trajectory(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await pilot.press("slash", *"zebra8", "enter")
        assert screen.cursor == 8 and screen.query_one(StepList).count == 9
        assert "match 1 of 1 at step 8" in read_screen(app)
        await pilot.press("slash", *"nothinglikethis", "enter")
        assert "no step matches" in read_screen(app)


async def test_long_step_is_cut_and_L_shows_all(tmp_path, read_screen):
    from annotator.models import Step, Trajectory
    from annotator.store import open_db
    from annotator.store.trajectories import save_trajectory

    path = tmp_path / "big.db"
    db = open_db(path)
    content = "\n".join(f"line {i}" for i in range(10_000)) + "\nTHE END"
    save_trajectory(db, Trajectory(id="big", source_format="test", content_hash="x",
                                   steps=[Step(index=0, agent="tool", kind="tool_result", tool_name="cat", content=content)]))
    db.close()
    app = make_app(path, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot, "big")
        assert "characters shown · L shows all" in read_screen(app)
        await pilot.press("L")
        assert screen.full and "L shows all" not in read_screen(app)
        assert "whole content, 98,897 characters, as plain text" in read_screen(app)
        view = screen.query_one(StepView)
        await pilot.press("pagedown", "ctrl+d")
        assert view.scroll_offset.y > 30 and "line 60" in read_screen(app)
        await pilot.press("pageup", "ctrl+u")
        assert view.scroll_offset.y == 0


async def test_next_previous_trajectory_help_and_back(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        assert app.screen.session.trajectory_id == "t1"
        await pilot.press("n")
        assert app.screen.session.trajectory_id == "t3"
        await pilot.press("question_mark")
        text = read_screen(app)
        assert "MOVES the onset there" in text and "Keys" in text
        await pilot.press("escape", "escape")
        assert "Queue of alice" in read_screen(app)
        assert app.screen.query_one("#queue-table").cursor_row == 1, "the queue's cursor is on the last one open (t3)"
        await pilot.press("enter", "p")
        assert app.screen.session.trajectory_id == "t1"


async def test_quote_takes_the_selected_text(tui_db):
    from textual.geometry import Offset
    from textual.selection import Selection

    from annotator.tui.widgets.step_view import StepView

    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open(pilot)
        await pilot.press("R", "j", "j", "3")
        view = screen.query_one(StepView)
        screen.selections = {view: Selection(Offset(7, 1), Offset(12, 1))}
        await pilot.pause()
        assert screen.get_selected_text() == "says "
        await pilot.press("Q", "enter")
        assert _current(app)["FM-1.3"].quote == "says"


async def test_replay_resumes_where_it_was_left_in_this_run(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter", "space", "space", "space", "1", "escape")
        assert "Queue of alice" in read_screen(app) and "1 in progress" in read_screen(app)
        await pilot.press("enter")
        screen = app.screen
        assert "[REPLAY]" in read_screen(app), "in progress, but left in replay mode: still replay mode"
        assert (screen.cursor, screen.query_one(StepList).count) == (3, 4)
        await pilot.press("R", "n", "p")
        assert "[REVIEW]" in read_screen(app) and app.screen.query_one(StepList).count == 12


async def test_an_80_column_terminal_keeps_the_steps_readable(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _open(pilot)
        await pilot.press("R")
        text = read_screen(app)
        assert "Planner        💬 step 0 says" in text, "the step list keeps room for previews"
        assert "1.1  Disobey task" in text and "specification" in text, "mode names wrap in the narrow panel, whole"
        assert "…" not in text.split("FC1")[1].split("FC2")[0], "no mode name of FC1 is cut"
        assert screen.query_one("#taxonomy-panel").size.width <= 38
