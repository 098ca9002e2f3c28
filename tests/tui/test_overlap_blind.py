"""An overlap item (assigned to two people, agreement measured on it) is worked blind end to end:
the review is stored as blind, so it never counts as made with the suggestions in view, and
the queue row shows neither its outcome nor its waiting suggestions."""

from __future__ import annotations

from textual.widgets import DataTable

from annotator.store import assignments, open_db, review
from annotator.store.suggestions import seen_suggestions
from annotator.tui.app import make_app

SIZE = (140, 42)


def _share_t1_with_bob(db_path) -> None:
    db = open_db(db_path)
    assignments.add_assignments(db, [("t1", "alice"), ("t1", "bob"), ("t3", "alice"), ("t2", "bob")])
    db.close()


async def test_an_overlap_item_is_stored_as_a_blind_review(tui_db):
    _share_t1_with_bob(tui_db)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # t1, the item shared with bob
        await pilot.pause()
        assert app.screen.session.trajectory_id == "t1" and app.screen.blind
        assert app.screen.session.blind, "the session records what the screen hides"
        await pilot.press("1", "D")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    db = open_db(tui_db)
    try:
        assert review.blind_reviews(db, ["alice"]) == [("t1", "alice", True)]
        assert seen_suggestions(db, "run:1", "alice") == [], "the run's suggestions on t1 were never in view"
    finally:
        db.close()


async def test_an_item_of_her_own_only_is_not_blind(tui_db):
    _share_t1_with_bob(tui_db)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        app.open_trajectory("t3")
        await pilot.pause()
        assert not app.screen.blind and not app.screen.session.blind


async def test_the_queue_hides_outcome_and_suggestions_of_overlap_rows(tui_db):
    _share_t1_with_bob(tui_db)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        header = [str(c.label) for c in table.ordered_columns]
        outcome, suggested = header.index("outcome"), header.index("suggested")
        rows = {table.get_row_at(i)[0].plain: table.get_row_at(i) for i in range(table.row_count)}
        assert rows["Task t1"][outcome].plain == "blind" and rows["Task t1"][suggested].plain == "", "shared with bob"
        assert rows["Task t3"][outcome].plain == "failure", "t3 is hers alone: sighted"
