"""The adjudication screen: two people's disagreements on one trajectory, decided mode by mode.

Opened from compare (``d``) on the two people picked there. For the mode under the cursor it
shows both verdicts with onset, evidence, quote and note; ``a`` or ``b`` takes one of them,
``p`` (present at the replay's current step) or ``x`` (absent) is your own decision, each with
a reason asked for; ``u`` undoes. Decisions are stored under the ``adjudicated`` source.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from annotator.annotating.adjudication import Adjudication, Choice
from annotator.annotating.compare import Disagreement
from annotator.errors import AnnotatorError
from annotator.models import Label
from annotator.text import inert
from annotator.tui.screens.modals import TextPrompt


def _verdict(lab: Label | None) -> Text:
    if lab is None or lab.verdict != "present":
        return Text((lab.verdict if lab else None) or "not tagged", style="grey62")
    out = Text(f"present @{lab.onset_step}", style="bold #ff5f5f")
    if lab.evidence_steps:
        out.append(" +" + ",".join(str(s) for s in lab.evidence_steps), style="#ff8787")
    return out


def _details(who: str, lab: Label | None) -> Text:
    out = Text()
    out.append(inert(who), style="bold")
    out.append(": ")
    out.append_text(_verdict(lab))
    if lab is not None and lab.quote:
        out.append(f'\n   quote: "{inert(lab.quote)}"', style="italic grey70")
    if lab is not None and lab.note:
        out.append(f"\n   note: {inert(lab.note)}", style="italic grey70")
    return out


class AdjudicateScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("a", "decide('a')", "take A"),
        Binding("b", "decide('b')", "take B"),
        Binding("p", "decide('own', 'present')", "own: present here"),
        Binding("x", "decide('own', 'absent')", "own: absent"),
        Binding("u", "undo", "undo"),
        Binding("escape", "close", "close"),
    ]

    def __init__(self, adjudication: Adjudication, step: int) -> None:
        super().__init__()
        self.adj, self.step = adjudication, step
        self.rows: list[Disagreement] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="adjudicate", classes="dialog"):
            yield Static(id="adjudicate-title")
            yield DataTable(id="adjudicate-table", cursor_type="row", zebra_stripes=True)
            yield Static(id="adjudicate-detail")
            yield Static(Text("a take A · b take B · p present at step (own) · x absent (own) · u undo · esc", style="grey62"))

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("mode", "name", "A", "B", "decision")
        self._fill()
        self.query_one(DataTable).focus()

    def _fill(self) -> None:
        adj = self.adj
        self.rows = adj.disagreements()
        decided = adj.decisions()
        table = self.query_one(DataTable)
        keep = table.cursor_row
        table.clear()
        for d in self.rows:
            done = decided.get(d.mode_id)
            cell = Text("—", style="grey50") if done is None else _verdict(done) + Text(f" ({done.extra.get('chose')})")
            table.add_row(Text(d.mode_id), Text(adj.taxonomy.mode(d.mode_id).name), _verdict(d.left), _verdict(d.right), cell)
        if self.rows:
            table.move_cursor(row=min(keep, len(self.rows) - 1))
        title = Text("Adjudicate ", style="bold")
        title.append(f"A {inert(adj.left)} / B {inert(adj.right)}: ", style="bold")
        pending = len(adj.pending())
        title.append(f"{len(self.rows)} disagreements, {pending} to decide" if self.rows else "they agree on every mode")
        self.query_one("#adjudicate-title", Static).update(title)
        self._detail()

    def _detail(self) -> None:
        if not self.rows:
            self.query_one("#adjudicate-detail", Static).update("")
            return
        d = self.rows[self.query_one(DataTable).cursor_row]
        body = _details("A " + self.adj.left, d.left) + Text("\n") + _details("B " + self.adj.right, d.right)
        done = self.adj.decisions().get(d.mode_id)
        if done is not None and done.extra.get("reason"):
            body.append(f"\ndecided: {inert(done.extra['reason'])}", style="#87d75f")
        self.query_one("#adjudicate-detail", Static).update(body)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail()

    def action_decide(self, choice: Choice, verdict: str | None = None) -> None:
        if not self.rows:
            return
        d = self.rows[self.query_one(DataTable).cursor_row]

        def save(reason: str | None) -> None:
            if reason is None:
                return
            try:
                self.adj.decide(d.mode_id, choice, reason, verdict=verdict, onset_step=self.step)
            except AnnotatorError as exc:
                self._refused(exc, "error")
                return
            self._fill()

        self.app.push_screen(TextPrompt(f"Why ({d.mode_id})?", ""), save)

    def action_undo(self) -> None:
        try:
            self.adj.undo()
        except AnnotatorError as exc:
            self._refused(exc, "information")
            return
        self._fill()

    def _refused(self, exc: AnnotatorError, severity: SeverityLevel) -> None:
        """Say why, as plain text: the message names the two people, whose names anyone typed."""
        self.notify(inert(str(exc)), severity=severity, markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
