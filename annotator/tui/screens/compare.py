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
    BINDINGS = [Binding("escape", "close", "close")]

    def __init__(self, session: AnnotationSession, taxonomy: Taxonomy) -> None:
        super().__init__()
        self.session, self.taxonomy = session, taxonomy
        names = labelled_by(session.db, session.trajectory_id)
        self.names = sorted({session.annotator, *names})
        others = [n for n in self.names if n != session.annotator]
        self.left = session.annotator
        self.right = others[0] if others else session.annotator
        self.rows: list[Disagreement] = []

    def compose(self) -> ComposeResult:
        options = [(Text(inert(n)), n) for n in self.names]
        with Vertical(id="compare", classes="dialog"):
            yield Static(Text("Compare — pick A and B, enter on a mode jumps to both onsets, esc closes", style="bold"))
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
        summary.append(f"{len(self.rows)} disagreements between ")
        summary.append(inert(self.left), style="bold")
        summary.append(" and ")
        summary.append(inert(self.right), style="bold")
        self.query_one("#compare-summary", Static).update(summary)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        d = self.rows[event.cursor_row]
        self.dismiss((d.mode_id, *d.onsets))

    def action_close(self) -> None:
        self.dismiss(None)
