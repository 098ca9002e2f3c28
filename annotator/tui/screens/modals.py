"""Modal screens: help (keys and definitions), one mode's definition, the task, a text prompt, a confirmation."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from annotator.taxonomy import Mode, Taxonomy
from annotator.text import plain_header
from annotator.tui.keys import QUEUE_HELP, REPLAY_KEYS
from annotator.tui.widgets.text import plain
from annotator.views import TrajectorySummary

TAGGING_HELP = (
    "Tagging: press a mode's key on the step where the failure first shows; that step becomes its onset. "
    "Pressing the key again on another step MOVES the onset there; pressing it on the onset step itself "
    "UNTAGS the mode. Every change is saved at once; u undoes, one action at a time."
)


def _definition(mode: Mode, taxonomy: Taxonomy) -> Text:
    cat = next(c for c in taxonomy.categories if c.id == mode.category)
    out = Text()
    out.append(f"{mode.id}  {mode.name}", style="bold")
    out.append(f"   key {mode.hotkey}   ({cat.id} {cat.name})\n", style="grey62")
    out.append(mode.definition.strip() + "\n")
    return out


def help_text(taxonomy: Taxonomy) -> Text:
    out = Text()
    out.append(TAGGING_HELP + "\n\n", style="italic")
    out.append("Keys\n", style="bold underline")
    width = max(len(k.shown) for k in REPLAY_KEYS)
    for k in REPLAY_KEYS:
        out.append(f"  {k.shown:>{width}}  ", style="bold #ffd75f")
        out.append(k.description + "\n")
    keys = " ".join(m.hotkey for m in taxonomy.modes)
    out.append(f"  {'modes':>{width}}  ", style="bold #ffd75f")
    out.append(f"{keys}: toggle the mode at the current step\n\n")
    out.append("Queue  ", style="bold underline")
    out.append(QUEUE_HELP + "\n\n")
    out.append(f"{taxonomy.name} ({taxonomy.version})\n", style="bold underline")
    for mode in taxonomy.modes:
        out.append_text(_definition(mode, taxonomy))
        out.append("\n")
    if taxonomy.citation:
        out.append(taxonomy.citation.strip() + "\n", style="grey62")
    return out


class _Dismissable(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,i", "dismiss_modal", "close")]

    def action_dismiss_modal(self) -> None:
        self.dismiss(None)


class HelpScreen(_Dismissable):
    """Every key and the full definition of every mode."""

    def __init__(self, taxonomy: Taxonomy) -> None:
        super().__init__()
        self._taxonomy = taxonomy

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help", classes="dialog"):
            yield Static(Text("Help — esc closes", style="bold"), classes="dialog-title")
            yield Static(help_text(self._taxonomy))


class DefinitionScreen(_Dismissable):
    """The definition of one mode."""

    def __init__(self, mode: Mode, taxonomy: Taxonomy) -> None:
        super().__init__()
        self._mode, self._taxonomy = mode, taxonomy

    def compose(self) -> ComposeResult:
        with Vertical(id="definition", classes="dialog"):
            yield Static(_definition(self._mode, self._taxonomy))
            yield Static(Text("esc closes", style="grey62"))


class TaskScreen(_Dismissable):
    """The trajectory's facts and its whole task text (the header shows one line of it), inert."""

    def __init__(self, summary: TrajectorySummary, *, blind: bool) -> None:
        super().__init__()
        self._summary, self._blind = summary, blind

    def compose(self) -> ComposeResult:
        facts = plain_header(self._summary.model_copy(update={"task": None}), show_outcome=not self._blind)
        with VerticalScroll(id="task", classes="dialog"):
            yield Static(Text("Task — esc closes", style="bold"))
            yield Static(Text(facts.rstrip() + "\n", style="grey70"))
            yield Static(plain(self._summary.task or "(this trajectory names no task)"))


class TextPrompt(ModalScreen[str | None]):
    """One line of text (note, quote, search); enter returns it, escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str, value: str = "", placeholder: str = "") -> None:
        super().__init__()
        self._title, self._value, self._placeholder = title, value, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt", classes="dialog"):
            yield Static(Text(self._title, style="bold"))
            yield Input(value=self._value, placeholder=self._placeholder, id="prompt-input")
            yield Static(Text("enter saves · esc cancels", style="grey62"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question with a body of plain text."""

    BINDINGS = [Binding("y,enter", "answer(True)", "yes"), Binding("escape,n", "answer(False)", "no")]

    def __init__(self, title: str, body: Text) -> None:
        super().__init__()
        self._title, self._body = title, body

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm", classes="dialog"):
            yield Static(Text(self._title, style="bold"))
            yield Static(self._body)
            yield Static(Text("y / enter: confirm · n / esc: cancel", style="grey62"))

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
