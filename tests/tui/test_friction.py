"""Pilot tests of what a day of annotating found: quitting, search in the queue and in a trajectory,
a suggestion's reasons, compare with nobody, L on a short step, j at the end of what is revealed,
and the queue of a person with assignments."""

from __future__ import annotations

from textual.widgets import DataTable

from annotator.models import Label
from annotator.store import assignments, labels, open_db
from annotator.tui.app import make_app
from annotator.tui.screens.replay import ReplayScreen
from annotator.tui.widgets.step_view import StepView

SIZE = (140, 42)


async def test_q_quits_the_queue_and_quit_is_in_the_footer(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "q quit" in read_screen(app)
        await pilot.press("enter")
        assert "^q quit" in read_screen(app)
        await pilot.press("question_mark")
        assert "quit (every action is already saved" in read_screen(app)
        await pilot.press("escape", "escape", "q")
    assert app.return_code == 0 and not app.is_running


async def test_queue_search_finds_titles_and_ids_as_you_type_and_says_when_nothing_matches(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        await pilot.press("slash", *"Task t2")
        await pilot.pause(0.5)
        assert table.row_count == 1 and table.get_row_at(0)[0].plain == "Task t2", "a title, without Enter"
        await pilot.press(*["backspace"] * 7, "t", "3")
        await pilot.pause(0.5)
        assert [table.get_row_at(i)[0].plain for i in range(table.row_count)] == ["Task t3"], "an id"
        await pilot.press(*"qqq")
        await pilot.pause(0.5)
        assert table.row_count == 0 and "nothing matches t3qqq" in read_screen(app)


async def test_search_in_a_trajectory_highlights_and_scrolls_to_the_match(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("slash", *"zebra8", "enter")
        await pilot.pause()
        screen = app.screen
        assert screen.cursor == 8 and "match 1 of 1 at step 8" in read_screen(app)
        view = screen.query_one(StepView)
        line = view.first_match()
        assert line is not None
        strip = view.render_line(line - round(view.scroll_offset.y))
        marked = [seg.text for seg in strip if seg.style and seg.style.bgcolor and seg.style.bgcolor.name == "#ffd75f"]
        assert marked == ["zebra8"]


async def test_suggestion_reasons_show_for_the_mode_under_the_cursor(tui_db, read_screen):
    db = open_db(tui_db)
    labels.add_labels(db, [Label(trajectory_id="t2", mode_id="FM-1.1", annotator="run:1", verdict="present",
                                 onset_step=1, provenance="rules", run_id=1, quote="says hello",
                                 rationale="rule unaware_of_termination: 7 step(s) continue after the signal")])
    db.close()
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        app.open_trajectory("t2")
        await pilot.pause()
        await pilot.press("R")
        text = read_screen(app)
        assert "why: rule unaware_of_termination: 7 step(s)" in text and "continue after the signal" in text
        assert 'quote: "says hello"' in text


async def test_compare_with_nobody_says_so(tui_db, read_screen):
    app = make_app(tui_db, "carol")
    async with app.run_test(size=SIZE) as pilot:
        app.open_trajectory("t2")
        await pilot.pause()
        await pilot.press("C")
        assert "no one to compare with" in read_screen(app)


async def test_L_on_a_short_step_and_j_at_the_last_revealed_step(tui_db, read_screen):
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        app.open_trajectory("t1")
        await pilot.pause()
        screen: ReplayScreen = app.screen
        await pilot.press("space", "L")
        assert screen.cursor == 1 and "this step is shown whole" in read_screen(app)
        await pilot.press("j")
        assert screen.cursor == 1 and "space reveals the next" in read_screen(app)


async def test_an_annotator_with_assignments_sees_them_first_and_overlap_items_blind(tui_db, read_screen):
    db = open_db(tui_db)
    assignments.add_assignments(db, [("t1", "alice"), ("t1", "bob"), ("t3", "alice"), ("t2", "bob")])
    db.close()
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        assert [table.get_row_at(i)[0].plain for i in range(table.row_count)] == ["Task t1", "Task t3"]
        text = read_screen(app)
        assert "assigned 2: 0 done, 0 in progress" in text and "overlap 1" in text
        await pilot.press("a")
        assert table.row_count == 3 and table.get_row_at(2)[0].plain == "Task t2"
        await pilot.press("a", "enter")
        assert app.screen.session.trajectory_id == "t1" and app.screen.blind, "t1 is shared with bob: blind"
        await pilot.press("R")
        assert "bob" not in read_screen(app) and "◇" not in read_screen(app)


async def test_adjudicate_from_compare_decides_into_the_adjudicated_source(tui_db, read_screen):
    from annotator.store import review

    db = open_db(tui_db)
    labels.add_labels(db, [Label(trajectory_id="t1", mode_id="FM-1.3", annotator="carol", verdict="present",
                                 onset_step=2, quote="says hello", note="loops")])
    db.close()
    app = make_app(tui_db, "dave")
    async with app.run_test(size=SIZE) as pilot:
        app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("C")
        await pilot.pause()
        compare = app.screen
        compare.left, compare.right = "bob", "carol"
        compare._fill()
        await pilot.press("d")
        await pilot.pause()
        text = read_screen(app)
        assert "A bob / B carol: 2 disagreements, 2 to decide" in text
        assert 'quote: "says hello"' in text and "note: loops" in text, "the mode under the cursor: FM-1.3"
        await pilot.press("b", *"carol is right", "enter")
        await pilot.pause()
        assert "1 to decide" in read_screen(app)
        decided = {lab.mode_id: lab for lab in labels.current_labels(app.db, "t1", "adjudicated")}
        assert decided["FM-1.3"].extra["reason"] == "carol is right" and decided["FM-1.3"].onset_step == 2
        await pilot.press("u")
        await pilot.pause()
        assert not labels.current_labels(app.db, "t1", "adjudicated") and "2 to decide" in read_screen(app)


async def test_annotate_adjudicate_lists_what_the_two_disagree_on_and_compare_opens_on_them(tui_db, read_screen):
    from annotator.store import review

    db = open_db(tui_db)
    labels.add_labels(db, [Label(trajectory_id="t1", mode_id="FM-1.3", annotator="carol", verdict="present", onset_step=2)])
    for tid in ("t1", "t2"):
        for who in ("bob", "carol"):
            review.set_review(db, tid, who, "done")
    db.close()
    app = make_app(tui_db, "dave", adjudicate=("bob", "carol"))
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one(DataTable)
        assert [table.get_row_at(i)[0].plain for i in range(table.row_count)] == ["Task t1"], "t2: they agree"
        assert "adjudicating bob / carol" in read_screen(app)
        await pilot.press("enter", "C")
        await pilot.pause()
        assert (app.screen.left, app.screen.right) == ("bob", "carol")
        await pilot.press("d")
        await pilot.pause()
        assert "A bob / B carol: 2 disagreements, 2 to decide" in read_screen(app)
