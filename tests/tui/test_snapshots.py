"""SVG snapshots of every screen and dialog at a fixed terminal size, and of the two main screens at
80×24 (update with --snapshot-update, and look at each new one before accepting it)."""

from __future__ import annotations

from annotator.tui.app import make_app

SIZE = (140, 42)
NARROW = (80, 24)


def _opening(*keys: str, trajectory: str = "t1", text: str = ""):
    """A ``run_before`` that opens ``trajectory``, presses ``keys`` and then types ``text``."""

    async def run(pilot):
        pilot.app.open_trajectory(trajectory)
        await pilot.pause()
        await pilot.press(*keys)
        if text:
            await pilot.press(*text)
        await pilot.pause()

    return run


def test_queue(tui_db, snap_compare):
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE)


def test_queue_blind(tui_db, snap_compare):
    """Blind: no outcome column, no waiting suggestions."""
    assert snap_compare(make_app(tui_db, "alice", blind=True), terminal_size=SIZE)


def test_replay_with_tags_and_suggestions(tui_db, snap_compare):
    """Review mode: tags with onset and evidence, a run's suggestions, bob's verdict under "others"."""
    keys = ("R", "j", "j", "3", "j", "v", "j", "j", "j", "e", "j", "j", "s", "k", "k", "k", "k", "k")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening(*keys))


def test_replay_mode(tui_db, snap_compare):
    """Replay mode: a trajectory not started lists only the steps revealed so far."""
    keys = ("space", "space", "space", "space")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening(*keys))


def test_replay_blind(tui_db, snap_compare):
    """Blind replay: no outcome in the header, no suggestions and no other people's verdicts."""
    keys = ("R", "j", "j", "3")
    assert snap_compare(make_app(tui_db, "alice", blind=True), terminal_size=SIZE, run_before=_opening(*keys))


def test_taxonomy_panel_decisions(tui_db, snap_compare):
    """The panel after accepting the suggestion on FM-1.3 and rejecting the one on FM-3.2, with the
    mode cursor on FM-2.3, where bob's verdict shows."""
    keys = ("R", "right_square_bracket", "right_square_bracket", "A")
    keys += ("right_square_bracket",) * 10 + ("X",)
    keys += ("left_square_bracket",) * 5
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening(*keys))


def test_compare(tui_db, snap_compare):
    keys = ("R", "j", "j", "e", "j", "1", "C")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening(*keys))


def test_help(tui_db, snap_compare):
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening("question_mark"))


def test_definition(tui_db, snap_compare):
    keys = ("right_square_bracket", "right_square_bracket", "i")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening(*keys))


def test_task(tui_db, snap_compare):
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening("T"))


def test_note(tui_db, snap_compare):
    keys = ("R", "j", "j", "3", "N")
    run = _opening(*keys, text="loops on the same call")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=run)


def test_quote(tui_db, snap_compare):
    keys = ("R", "j", "j", "3", "Q")
    run = _opening(*keys, text="says hello")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=run)


def test_search(tui_db, snap_compare):
    run = _opening("R", "slash", text="zebra")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=run)


def test_done_confirmation(tui_db, snap_compare):
    keys = ("R", "j", "j", "3", "j", "j", "j", "j", "e", "D")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE, run_before=_opening(*keys))


def test_narrow_queue(tui_db, snap_compare):
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=NARROW)


def test_narrow_replay(tui_db, snap_compare):
    keys = ("R", "j", "j", "3", "j", "j", "j", "j", "e")
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=NARROW, run_before=_opening(*keys))


def test_queue_with_assignments(tui_db, snap_compare):
    """alice's own assignments only, the overlap one shared with bob (blind: no outcome, no suggestions), and
    her progress with them."""
    from annotator.store import assignments, open_db

    db = open_db(tui_db)
    assignments.add_assignments(db, [("t1", "alice"), ("t1", "bob"), ("t3", "alice"), ("t2", "bob")])
    db.close()
    assert snap_compare(make_app(tui_db, "alice"), terminal_size=SIZE)


def test_adjudicate(tui_db, snap_compare):
    """Adjudicating bob and carol on t1: both verdicts per mode, carol's quote and note, one decided."""
    from annotator.models import Label
    from annotator.store import labels, open_db

    db = open_db(tui_db)
    labels.add_labels(db, [Label(trajectory_id="t1", mode_id="FM-1.3", annotator="carol", verdict="present",
                                 onset_step=2, quote="says hello", note="loops")])
    db.close()

    async def run(pilot):
        pilot.app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("C")
        await pilot.pause()
        compare = pilot.app.screen
        compare.left, compare.right = "bob", "carol"
        compare._fill()
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("j", "a", *"bob saw it first", "enter", "k")
        await pilot.pause()

    assert snap_compare(make_app(tui_db, "dave"), terminal_size=SIZE, run_before=run)
