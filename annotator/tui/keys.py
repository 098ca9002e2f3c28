"""The keyboard of the annotation app: one table that drives the bindings, the help and the checks.

Mode hotkeys come from the codebook (so a custom taxonomy brings its own keys); the keys below
are reserved for navigation and editing, and a codebook that claims one of them is refused
with a message naming the clash instead of silently losing a key.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding

from annotator.errors import AnnotatorError
from annotator.taxonomy import Taxonomy


class HotkeyClash(AnnotatorError):
    """A codebook hotkey that the annotation screen already uses for something else."""


@dataclass(frozen=True)
class Key:
    key: str
    shown: str
    action: str
    description: str
    footer: str = ""
    """Short label in the footer; empty keeps the key out of the footer."""


REPLAY_KEYS: tuple[Key, ...] = (
    Key("ctrl+q", "^q", "app.quit", "quit (every action is already saved; q in the queue too)"),
    Key("j,down", "j/↓", "cursor(1)", "next step", "next"),
    Key("k,up", "k/↑", "cursor(-1)", "previous step", "prev"),
    Key("g", "g", "first", "first step"),
    Key("G", "G", "last", "last step (last revealed in replay mode)"),
    Key("space", "space", "reveal", "replay mode: reveal the next step", "reveal"),
    Key("R", "R", "toggle_review", "toggle replay mode / review mode (all steps)", "review"),
    Key("left_square_bracket", "[", "mode_cursor(-1)", "previous mode in the taxonomy panel"),
    Key("right_square_bracket", "]", "mode_cursor(1)", "next mode in the taxonomy panel"),
    Key("i", "i", "definition", "definition of the mode under the cursor", "define"),
    Key("v", "v", "evidence", "add/remove this step as evidence of the mode under the cursor"),
    Key("N", "N", "note", "note on the mode under the cursor"),
    Key("Q", "Q", "quote", "quote for the mode under the cursor (selected text, or type it)"),
    Key("A", "A", "decide('accepted')", "accept the suggestion on the mode under the cursor: it becomes your label"),
    Key("X", "X", "decide('rejected')", "reject it (after accepting: also clears the label accepting gave you)"),
    Key("o", "o", "jump_cited", "jump to the next cited step (suggestion, or compared onsets)"),
    Key("slash", "/", "search", "search in this trajectory (again: next match)", "search"),
    Key("n", "n", "trajectory(1)", "next trajectory in the queue"),
    Key("p", "p", "trajectory(-1)", "previous trajectory in the queue"),
    Key("u", "u", "undo", "undo the last action (repeat for more)", "undo"),
    Key("D", "D", "done", "mark done (untagged modes become absent)", "done"),
    Key("L", "L", "full", "show the whole of a long step"),
    Key("pagedown,ctrl+d", "PgDn ^d", "scroll_step(1)", "scroll the step view down a page"),
    Key("pageup,ctrl+u", "PgUp ^u", "scroll_step(-1)", "scroll the step view up a page"),
    Key("T", "T", "task", "the task in full, with the trajectory's source, format and agents"),
    Key("C", "C", "compare", "compare two annotators (adjudication)"),
    Key("question_mark", "?", "help", "keys and full definitions", "help"),
    Key("escape", "esc", "back", "back to the queue", "queue"),
)

#: The queue's keys, for the help (its bindings are on the queue screen).
QUEUE_HELP = "enter opens · n next unfinished · / search (titles, ids, steps) · a mine/all · q quits"

_CHARACTERS = {"left_square_bracket": "[", "right_square_bracket": "]", "slash": "/", "question_mark": "?", "space": " "}


def reserved_characters() -> set[str]:
    chars: set[str] = set()
    for k in REPLAY_KEYS:
        for name in k.key.split(","):
            chars.add(_CHARACTERS.get(name, name))
    return chars


def check_hotkeys(taxonomy: Taxonomy) -> None:
    """Refuse a codebook whose hotkeys clash with the reserved keys."""
    reserved = reserved_characters()
    clashes = [m for m in taxonomy.modes if m.hotkey in reserved]
    if clashes:
        names = ", ".join(f"{m.id} ({m.hotkey!r})" for m in clashes)
        raise HotkeyClash(f"hotkeys reserved by the annotation screen are used by: {names}")


def replay_bindings(taxonomy: Taxonomy) -> list[Binding]:
    """Bindings of the replay screen: the reserved keys, then one per mode."""
    out = [Binding(k.key, k.action, k.footer or k.description, show=bool(k.footer), key_display=k.shown) for k in REPLAY_KEYS]
    out += [Binding(m.hotkey, f"toggle('{m.id}')", f"toggle {m.id}", show=False) for m in taxonomy.modes]
    return out
