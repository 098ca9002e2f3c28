"""The queue screen: what the annotator has to do, filtered, searched, with overall progress.

Enter opens the trajectory under the cursor; ``n`` opens the next unfinished one. The outcome
column is left out in blind mode, and so are waiting suggestions; an overlap item, which opens
blind, shows neither in its row. The search looks in titles, ids and step text as it is typed.
An annotator given trajectories by ``mast assign`` sees those first and only (``a`` shows
everything), and the header says how far they are with them. The first ``QUEUE_LIMIT``
matching trajectories are listed, and the header says how many match in all; ``n`` finds the
next unfinished one among all of them.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Select, Static
from textual.widgets.data_table import ColumnKey

from annotator.annotating import queue as work
from annotator.annotating.adjudication import to_adjudicate
from annotator.annotating.assignments import summary_line
from annotator.text import one_line
from annotator.tui.widgets.text import line

STATUS_STYLE = {"not_started": "grey62", "in_progress": "bold #ffd75f", "done": "bold #87d75f"}


def _option(value: str) -> Text:
    """A filter's option: a value from imported data, shown as the text it is (never parsed as
    markup), on one line."""
    return Text(one_line(value, 200), no_wrap=True, overflow="ellipsis")


class QueueScreen(Screen[None]):
    BINDINGS = [
        Binding("n", "next_unfinished", "next unfinished"),
        Binding("j", "row(1)", "down", show=False),
        Binding("k", "row(-1)", "up", show=False),
        Binding("g", "row(-1_000_000)", "first", show=False),
        Binding("G", "row(1_000_000)", "last", show=False),
        Binding("slash", "focus_search", "search", key_display="/"),
        Binding("escape", "focus_table", "list", show=False),
        Binding("a", "toggle_everything", "mine/all"),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q", "app.quit", "quit", show=False),
    ]

    #: Seconds the search waits after the last key before it runs.
    SEARCH_DEBOUNCE_S = 0.25

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[work.QueueRow] = []
        self.total = 0
        """How many trajectories match, of which ``rows`` are the first."""
        self.columns: list[ColumnKey] = []
        self._header_text = Text()
        self.search: str | None = None
        """The search in force (set once typing pauses), kept when another process's write
        rebuilds the rows."""
        self.everything = False
        """Show every trajectory, not only the annotator's assignments."""
        self._search_timer = None

    def compose(self) -> ComposeResult:
        db = self.app.db
        yield Static(id="queue-header")
        with Horizontal(id="queue-filters"):
            yield Input(placeholder="/ search titles, ids, steps", id="search")
            yield Select([(_option(v), v) for v in work.filter_choices(db, "system")], prompt="system", id="system")
            yield Select([(_option(v), v) for v in work.filter_choices(db, "model")], prompt="model", id="model")
            yield Select(
                [("not started", "not_started"), ("in progress", "in_progress"), ("done", "done")],
                prompt="status",
                id="status",
            )
        yield DataTable(id="queue-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        columns = ["title", "system", "model", "steps", "status"]
        if not self.app.blind:
            columns[4:4] = ["outcome"]
            columns.append("suggested")
        self.columns = table.add_columns(*columns)
        self.reload()
        table.focus()

    def on_screen_resume(self) -> None:
        self.reload()

    def _filter(self, widget_id: str) -> str | None:
        value = self.query_one(f"#{widget_id}", Select).value
        return None if value is Select.NULL else str(value)

    def _query(self, *, unfinished: bool = False, limit: int | None = None) -> work.Queue:
        wanted = None
        if self.app.adjudicate is not None:
            wanted = to_adjudicate(self.app.db, *self.app.adjudicate, self.app.taxonomy)
        return work.queue(
            self.app.db,
            self.app.annotator,
            system=self._filter("system"),
            model=self._filter("model"),
            status=self._filter("status"),
            search=self.search,
            tag=self.app.tag,
            everything=self.everything or self.app.adjudicate is not None,
            unfinished=unfinished,
            ids=wanted,
            limit=work.QUEUE_LIMIT if limit is None else limit,
        )

    def _cells(self, r: work.QueueRow) -> list[Text]:
        s = r.summary
        # Formats that name no system (a chat log, a span export) show their format instead.
        system = line(s.system, 16) if s.system else line(s.source_format, 16, "italic grey62")
        cells = [line(s.title or s.id, 34), system, line(s.model, 20), Text(str(s.n_steps), justify="right")]
        if not self.app.blind:
            # An overlap item opens blind: its row tells no more than its replay screen will.
            cells.append(Text("blind", style="#ff8787") if r.blind else line(s.outcome, 12))
        cells.append(Text(r.status.replace("_", " "), style=STATUS_STYLE[r.status]))
        if not self.app.blind:
            shown = r.pending_suggestions and not r.blind
            cells.append(Text(str(r.pending_suggestions) if shown else "", style="#d7afff"))
        return cells

    def reload(self, follow: str | None = None, listed: work.Queue | None = None) -> None:
        """Redraw every row (``listed`` if already read, else queried); the cursor goes to ``follow``
        (default: the trajectory opened last), else stays at its row number."""
        app = self.app
        table = self.query_one(DataTable)
        keep = table.cursor_row
        follow = follow or app.last_opened
        listed = self._query() if listed is None else listed
        self.rows, self.total = listed.rows, listed.total
        app.queue_ids = [r.summary.id for r in self.rows]
        table.clear()
        for r in self.rows:
            table.add_row(*self._cells(r), key=r.summary.id)
        if self.rows:
            ids = app.queue_ids
            row = ids.index(follow) if follow in ids else min(keep, len(self.rows) - 1)
            table.move_cursor(row=row)
        self._header()

    def show_store_changes(self) -> None:
        """Another process wrote (a status, a run's suggestions, an import): show the new state.

        When the same trajectories are listed, only the rows that changed are rewritten, so the
        cursor and the scroll position stay; otherwise the list is rebuilt around the same row.
        """
        table = self.query_one(DataTable)
        listed = self._query()
        if [r.summary.id for r in listed.rows] != self.app.queue_ids:
            y = table.scroll_y
            under = self.rows[table.cursor_row].summary.id if self.rows else None
            self.reload(follow=under, listed=listed)
            table.scroll_to(y=y, animate=False)
            return
        for old, new in zip(self.rows, listed.rows):
            if old != new:
                for column, cell in zip(self.columns, self._cells(new)):
                    table.update_cell(new.summary.id, column, cell)
        self.rows, self.total = listed.rows, listed.total
        self._header()

    def _header(self) -> None:
        p = work.progress(self.app.db, self.app.annotator, self.app.taxonomy.mode_ids)
        out = Text()
        out.append("Queue of ", style="bold")
        out.append_text(line(self.app.annotator, 30, "bold #5fafff"))
        out.append(f"   {p.done}/{p.total} done, {p.in_progress} in progress", style="bold")
        if p.total:
            out.append(f" ({100 * p.done / p.total:.0f}%)")
        if self.total > len(self.rows):
            out.append(f"   showing the first {len(self.rows):,} of {self.total:,}: filter or search for the others",
                       style="grey62")
        else:
            out.append(f"   showing {len(self.rows)}", style="grey62")
        if not p.total:
            out.append("   nothing to annotate yet: mast import PATH, or mast annotate PATH", style="bold #ffd75f")
        elif not self.rows and self.search:
            out.append("   nothing matches ", style="bold #ffd75f")
            out.append_text(line(self.search, 30, "bold #ffd75f"))
        if p.team is not None:
            out.append("\n")
            out.append(summary_line(p.team), style="#87afd7")
            out.append("   showing all (a: mine only)" if self.everything else "   a: show all", style="grey62")
        if self.app.blind:
            out.append("   [BLIND]", style="bold #ff8787")
        if self.app.adjudicate is not None:
            out.append("   adjudicating ", style="bold #87d75f")
            out.append_text(line(" / ".join(self.app.adjudicate), 40, "bold #87d75f"))
            out.append(": C then d on a trajectory", style="#87d75f")
        if out != self._header_text:
            self._header_text = out
            self.query_one("#queue-header", Static).update(out)

    def on_input_changed(self, event: Input.Changed) -> None:
        if self._search_timer is not None:
            self._search_timer.stop()
        self._search_timer = self.set_timer(self.SEARCH_DEBOUNCE_S, lambda: self._run_search(event.value))

    def _run_search(self, value: str) -> None:
        search = value.strip() or None
        if search != self.search:
            self.search = search
            self.reload()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if self._search_timer is not None:
            self._search_timer.stop()
        self._run_search(event.value)
        self.query_one(DataTable).focus()

    def action_toggle_everything(self) -> None:
        if not work.has_assignments(self.app.db, self.app.annotator):
            self.notify("you have no assignments: every trajectory is listed")
            return
        self.everything = not self.everything
        self.reload()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.reload()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.app.open_trajectory(self.rows[event.cursor_row].summary.id)

    def action_next_unfinished(self) -> None:
        row = work.next_unfinished(self.rows)
        if row is None and self.total > len(self.rows):  # among those not listed
            row = next(iter(self._query(unfinished=True, limit=1).rows), None)
        if row is None:
            self.notify("every trajectory in this list is done")
            return
        self.app.open_trajectory(row.summary.id)

    def action_row(self, delta: int) -> None:
        table = self.query_one(DataTable)
        table.move_cursor(row=max(0, min(table.cursor_row + delta, table.row_count - 1)))

    def action_focus_search(self) -> None:
        self.query_one("#search", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one(DataTable).focus()

    def action_help(self) -> None:
        from annotator.tui.screens.modals import HelpScreen

        self.app.push_screen(HelpScreen(self.app.taxonomy))
