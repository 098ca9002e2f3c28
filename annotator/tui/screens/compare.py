"""The compare screen (adjudication): two annotators or runs, and the modes they disagree on.

Selecting a row returns (mode, onset of A, onset of B) to the replay screen, which jumps to
the onsets and marks them A and B in the step list.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Select, Static

from annotator.annotating.compare import Disagreement, disagreements, labelled_by
from annotator.annotating.session import AnnotationSession
from annotator.taxonomy import Taxonomy
from annotator.text import inert


def _cell(d: Disagreement, side: str) -> Text:
    lab = d.left if side == "left" else d.right
    if lab is None:
        return Text("—", style="grey50")
    if lab.verdict == "present":
        onset = "" if lab.onset_step is None else f" @{lab.onset_step}"
        return Text("present" + onset, style="bold #ff5f5f")
    return Text(lab.verdict or "cleared", style="grey62")


class CompareScreen(ModalScreen[tuple[str, int | None, int | None] | None]):
    BINDINGS = [Binding("escape", "close", "close"), Binding("d", "adjudicate", "adjudicate A and B")]

    def __init__(
        self, session: AnnotationSession, taxonomy: Taxonomy, step: int = 0, pair: tuple[str, str] | None = None
    ) -> None:
        """``step``: the replay's current step, where an adjudicator's own "present" goes; ``pair``:
        the two people to put as A and B (``mast annotate --adjudicate``)."""
        super().__init__()
        self.session, self.taxonomy, self.step = session, taxonomy, step
        names = labelled_by(session.db, session.trajectory_id)
        self.names = sorted({session.annotator, *names})
        others = [n for n in self.names if n != session.annotator]
        self.left = session.annotator
        self.right = others[0] if others else session.annotator
        if pair is not None and set(pair) <= set(self.names):
            self.left, self.right = pair
        self.rows: list[Disagreement] = []

    def compose(self) -> ComposeResult:
        options = [(Text(inert(n)), n) for n in self.names]
        with Vertical(id="compare", classes="dialog"):
            yield Static(Text("Compare — pick A and B, enter on a mode jumps to both onsets, d adjudicates, esc closes", style="bold"))
            with Horizontal(id="compare-pickers"):
                yield Static(Text("A", style="bold"), classes="picker-label")
                yield Select(options, value=self.left, allow_blank=False, id="left")
                yield Static(Text("B", style="bold"), classes="picker-label")
                yield Select(options, value=self.right, allow_blank=False, id="right")
            yield Static(id="compare-summary")
            yield DataTable(id="disagreements", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("mode", "name", "kind", "A", "B")
        self._fill()
        table.focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        setattr(self, event.select.id or "", event.value)
        self._fill()

    def _fill(self) -> None:
        self.rows = disagreements(self.session.db, self.session.trajectory_id, self.left, self.right, self.taxonomy)
        table = self.query_one(DataTable)
        table.clear()
        for d in self.rows:
            name = self.taxonomy.mode(d.mode_id).name
            table.add_row(Text(d.mode_id), Text(name), Text(d.kind), _cell(d, "left"), _cell(d, "right"))
        summary = Text()
        if self.left == self.right:
            summary.append("no one to compare with: nobody else has labelled this trajectory yet", style="bold #ffd75f")
            self.query_one("#compare-summary", Static).update(summary)
            return
        summary.append(f"{len(self.rows)} disagreements between ")
        summary.append(inert(self.left), style="bold")
        summary.append(" and ")
        summary.append(inert(self.right), style="bold")
        self.query_one("#compare-summary", Static).update(summary)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        d = self.rows[event.cursor_row]
        self.dismiss((d.mode_id, *d.onsets))

    def action_adjudicate(self) -> None:
        """Decide A's and B's disagreements into the ``adjudicated`` source."""
        if self.left == self.right:
            self.notify("pick two different people as A and B first")
            return
        from annotator.annotating.adjudication import Adjudication
        from annotator.tui.screens.adjudicate import AdjudicateScreen

        adj = Adjudication(self.session.db, self.session.trajectory_id, self.session.annotator, self.left, self.right,
                           self.taxonomy)
        self.app.push_screen(AdjudicateScreen(adj, self.step), lambda _: self._fill())

    def action_close(self) -> None:
        self.dismiss(None)
