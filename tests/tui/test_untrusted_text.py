"""Names and values that come from imported data or from people (a system, a model, an annotator
typed into ``mast serve``'s form) are shown as the text they are on every screen: never parsed
as Textual markup, so ``[@click=app.quit]`` is a string, not a live action."""

from __future__ import annotations

from textual.widgets import Select

from annotator.store import open_db
from annotator.store.trajectories import save_trajectory
from annotator.tui.app import make_app
from tests.tui.conftest import trajectory

SIZE = (140, 42)
SYSTEM = "[@click=app.quit]x"
MODEL = "[b]mod[/b]"


async def test_filter_options_from_imported_data_are_plain_text(tui_db, read_screen):
    db = open_db(tui_db)
    save_trajectory(db, trajectory("t9", system=SYSTEM, model=MODEL))
    db.close()
    app = make_app(tui_db, "alice")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query_one("#system", Select).focus()
        await pilot.press("enter")  # opens the list of systems
        await pilot.pause()
        assert SYSTEM in read_screen(app)
        await pilot.press("escape")
        app.screen.query_one("#model", Select).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert read_screen(app).count(MODEL) == 2, "in the table and, as written, in the list"


async def test_a_refused_decision_names_the_people_as_written(tui_db, read_screen):
    """A name typed into ``mast serve``'s form reaches the adjudication's error message intact."""
    from annotator.models import Label
    from annotator.store import labels

    eve = "[@click=app.quit]eve"
    db = open_db(tui_db)
    labels.add_labels(db, [Label(trajectory_id="t1", mode_id="FM-2.3", annotator=eve, verdict="absent")])
    db.close()
    app = make_app(tui_db, "dave")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("C")
        await pilot.pause()
        compare = app.screen
        compare.left, compare.right = eve, "bob"
        compare._fill()
        await pilot.press("d")
        await pilot.pause()
        assert f"A {eve} / B bob: 1 disagreements" in read_screen(app)
        db = open_db(tui_db)  # meanwhile eve comes round to bob's view: nothing is left to decide
        labels.add_labels(db, [Label(trajectory_id="t1", mode_id="FM-2.3", annotator=eve, verdict="present", onset_step=6)])
        db.close()
        await pilot.press("a", *"bob is right", "enter")
        await pilot.pause()
        await pilot.pause()
        assert f"{eve} and bob agree on FM-2.3" in read_screen(app)
        assert app.is_running
