"""The replay screen: step list, step view and taxonomy panel, and the keys that annotate.

Keys map to ``AnnotationSession`` calls (which commit at once) and the screen redraws from
what the store then says, so what is on screen is always what is saved. In replay mode only
the steps up to the furthest one revealed are listed; review mode lists them all.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from annotator.annotating.session import AnnotationSession
from annotator.errors import AnnotatorError, StoreError
from annotator.models import Decision
from annotator.text import inert
from annotator.tui.keys import replay_bindings
from annotator.tui.screens.modals import ConfirmScreen, DefinitionScreen, HelpScreen, TaskScreen, TextPrompt
from annotator.tui.widgets.step_list import StepList
from annotator.tui.widgets.step_view import StepView
from annotator.tui.widgets.taxonomy_panel import PanelState, TaxonomyPanel
from annotator.tui.widgets.text import line

#: What ``_guard`` returns when the session refused an action.
FAILED = object()


def _kept(by_mode: dict[str, list]) -> dict[str, list]:
    """The modes that still have something to show."""
    return {m: items for m, items in by_mode.items() if items}


class ReplayScreen(Screen[None]):
    """One trajectory, replayed for one annotator."""

    #: Not in the key list of the help: the NOT SAVED message that makes it useful names it.
    BINDINGS = [Binding("ctrl+r", "retry", "retry a refused write", show=False)]

    def __init__(
        self, session: AnnotationSession, *, blind: bool, position: tuple[bool, int] | None = None
    ) -> None:
        """``position`` (review mode?, furthest step revealed) resumes a trajectory left earlier in
        this run of the app; without it, a trajectory not started opens in replay mode at its
        first step and any other in review mode."""
        super().__init__()
        self.session = session
        self.blind = blind
        self.taxonomy = session.taxonomy
        for b in replay_bindings(self.taxonomy):
            self._bindings.bind(b.key, b.action, b.description, show=b.show, key_display=b.key_display)
        self.summary = session.summary()
        self.n_steps = self.summary.n_steps
        if position is not None:
            self.review_mode, self.revealed = position
        else:
            self.review_mode = session.status() != "not_started"
            self.revealed = 0 if not self.review_mode else max(self.n_steps - 1, 0)
        self.cursor = 0
        self.mode_cursor = 0
        self.full = False
        self._total = 0
        """The length of the step under the cursor (its content may be shown cut to its head)."""
        self.search_query = ""
        self.compare_marks: dict[int, str] = {}
        self.refused: tuple | None = None
        """The last session call the database refused, with its arguments, until it succeeds."""
        self.attributions = [] if blind else session.attributions()

    # ---- layout

    def compose(self) -> ComposeResult:
        yield Static(self._header(), id="replay-header")
        with Horizontal(id="replay-main"):
            with Vertical(id="replay-left"):
                yield StepList(self.session, self._visible(), id="step-list")
                yield StepView(id="step-view")
            yield TaxonomyPanel(id="taxonomy-panel")
        yield Static(id="status-line")
        yield Footer()

    def on_mount(self) -> None:
        self._refresh_labels()
        self._move(self.revealed if not self.review_mode else self.cursor)

    def on_unmount(self) -> None:
        self.app.replay_positions[self.session.trajectory_id] = (self.review_mode, self.revealed)

    def _header(self) -> Text:
        s = self.summary
        out = Text()
        out.append("[REVIEW] " if self.review_mode else "[REPLAY] ", style="bold #ffd75f")
        if self.blind:
            out.append("[BLIND] ", style="bold #ff8787")
        out.append_text(line(s.title or s.id, 60, "bold"))
        facts = [("system", s.system), ("model", s.model), ("steps", str(s.n_steps))]
        if not self.blind:
            facts.append(("outcome", s.outcome))
        facts.append(("format", s.source_format))
        for key, value in facts:
            if value:
                out.append(f"  {key} ", style="grey62")
                out.append_text(line(value, 30))
        if s.task:
            out.append("\ntask (T) ", style="grey62")
            out.append_text(line(s.task, 400))
        return out

    def _visible(self) -> int:
        return self.n_steps if self.review_mode else min(self.revealed + 1, self.n_steps)

    # ---- drawing

    def _say(self, message: str, style: str = "") -> None:
        self.query_one("#status-line", Static).update(Text(message, style=style))

    def _refresh_labels(self) -> None:
        view = self.session.view(blind=self.blind)
        labels, suggestions, others = view.labels, view.suggestions, view.others
        # In replay mode what points past the revealed step (an attribution, a suggestion citing a
        # later step, someone's onset further on) shows once that step is revealed: it would tell the end.
        attributions = [
            a for a in self.attributions if self.review_mode or (a.step is not None and a.step <= self.revealed)
        ]
        if not self.review_mode:
            suggestions = _kept({m: [s for s in v if max(s.cited_steps, default=0) <= self.revealed] for m, v in suggestions.items()})
            others = _kept({m: [o for o in v if (o.onset_step or 0) <= self.revealed] for m, v in others.items()})
        mode = self.taxonomy.modes[self.mode_cursor]
        self.query_one(TaxonomyPanel).show(
            PanelState(self.taxonomy, mode.id, labels, suggestions, others, attributions)
        )
        marks = {a.step: "✗" for a in attributions if a.step is not None}
        marks.update(self.compare_marks)
        for lab in labels.values():
            if lab.verdict == "present":
                for i in lab.evidence_steps:
                    marks.setdefault(i, "+")
                if lab.onset_step is not None:
                    marks[lab.onset_step] = "●"
        for items in suggestions.values():
            for s in items:
                for i in s.cited_steps:
                    marks.setdefault(i, "◇")
        self.query_one(StepList).set_marks(marks)

    def show_store_changes(self) -> None:
        """Another process wrote (a tag of someone else, a run's suggestions): redraw the labels.

        The cursor, the replay position and the step view stay as they are; the panel and the
        step list's marks are redrawn only where what they show changed. A screen whose widgets
        are not there (still composing, or being torn down as the app exits) draws nothing: its
        ``on_mount`` reads the labels anyway.
        """
        if self.query(TaxonomyPanel):
            self._refresh_labels()

    def _move(self, index: int) -> None:
        if self.n_steps == 0:
            self.query_one(StepView).show(None)
            return
        self.cursor = max(0, min(index, self._visible() - 1))
        self.query_one(StepList).show(self._visible(), self.cursor)
        self.full = False
        self._show_step()

    def _show_step(self, highlight: str = "") -> None:
        if self.full:
            step = self.session.step(self.cursor)
            self.query_one(StepView).show(step, len(step.content), highlight)
        else:
            step, self._total = self.session.step_head(self.cursor)
            self.query_one(StepView).show(step, self._total, highlight)

    def _guard(self, fn, *args):
        """Run a session call; an expected failure becomes a status message (and FAILED), not a crash.

        A write the database refused (locked too long, read-only, full disk) is said in place as
        not saved, and the call is kept: ctrl+r makes it again, with the same arguments (the
        step it was made at, the note as typed), so no action is lost without being said.
        """
        try:
            result = fn(*args)
        except StoreError as exc:
            self.refused = (fn, args)
            self._say(f"NOT SAVED · ctrl+r tries again · {inert(exc.reason)}", "bold #ff8787")
            return FAILED
        except AnnotatorError as exc:
            self._say(str(exc), "bold #ff8787")
            return FAILED
        if self.refused is not None and self.refused[0] == fn and self.refused[1] == args:
            self.refused = None
        return result

    def action_retry(self) -> None:
        """Make again the write the database refused last."""
        if self.refused is None:
            self._say("nothing to try again: every action so far is saved")
            return
        fn, args = self.refused
        if self._guard(fn, *args) is FAILED:
            return
        self._refresh_labels()
        self._say(f"saved on retry: {fn.__name__.replace('_', ' ')}")

    # ---- navigation

    def action_cursor(self, delta: int) -> None:
        if delta > 0 and not self.review_mode and self.cursor == self._visible() - 1 < self.n_steps - 1:
            self._say("last revealed step · space reveals the next, R shows them all")
            return
        self._move(self.cursor + delta)

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(self._visible() - 1)

    def action_reveal(self) -> None:
        if self.review_mode:
            self._move(self.cursor + 1)
            return
        before = self.revealed
        if self.revealed + 1 < self.n_steps:
            self.revealed += 1
        self._move(self.revealed)
        self._revealed_attribution(before)

    def action_toggle_review(self) -> None:
        self.review_mode = not self.review_mode
        if not self.review_mode:
            self.revealed = self.cursor
        self._move(self.cursor)
        self._refresh_labels()
        self.query_one("#replay-header", Static).update(self._header())
        self._say("review mode: every step is listed" if self.review_mode else "replay mode: space reveals the next step")

    def action_scroll_step(self, pages: int) -> None:
        view = self.query_one(StepView)
        if pages > 0:
            view.scroll_page_down(animate=False)
        else:
            view.scroll_page_up(animate=False)

    def action_full(self) -> None:
        if self.full or self._total <= len(self.session.step_head(self.cursor)[0].content):
            self._say("this step is shown whole")
            return
        self.full = True
        self._show_step()

    def action_mode_cursor(self, delta: int) -> None:
        self.mode_cursor = (self.mode_cursor + delta) % len(self.taxonomy.modes)
        self._refresh_labels()

    def _jump(self, index: int) -> None:
        """Go to ``index``, revealing up to it in replay mode."""
        before = self.revealed
        if not self.review_mode and index > self.revealed:
            self.revealed = min(index, self.n_steps - 1)
        self._move(index)
        self._revealed_attribution(before)

    def _revealed_attribution(self, before: int) -> None:
        """Redraw the labels when steps were revealed since ``before`` (in replay mode): an
        attribution, a suggestion or someone's verdict may point at one of them."""
        if not self.review_mode and self.revealed != before:
            self._refresh_labels()

    def action_jump_cited(self) -> None:
        mode_id = self.taxonomy.modes[self.mode_cursor].id
        cited = sorted(self.compare_marks) if self.compare_marks else []
        if not cited and not self.blind:
            suggestion = next(iter(self.session.suggestions().get(mode_id, [])), None)
            cited = suggestion.cited_steps if suggestion else []
        if not cited:
            self._say(f"nothing cited for {mode_id}")
            return
        later = [i for i in cited if i > self.cursor]
        self._jump(later[0] if later else cited[0])
        self._say(f"cited steps: {' '.join(f'#{i}' for i in cited)}")

    # ---- annotation

    def action_toggle(self, mode_id: str) -> None:
        if self.n_steps == 0:
            self._say("this trajectory has no steps to tag: D records every mode as absent")
            return
        toggled = self._guard(self.session.toggle, mode_id, self.cursor)
        if toggled is FAILED:
            return
        self.mode_cursor = self.taxonomy.mode_ids.index(mode_id)
        self._refresh_labels()
        verb = {"tagged": "tagged", "moved": "moved onset of", "untagged": "untagged"}[toggled.kind]
        self._say(f"{verb} {mode_id} at step {toggled.step} · u undoes")

    def _cursor_mode(self) -> str:
        return self.taxonomy.modes[self.mode_cursor].id

    def action_evidence(self) -> None:
        mode_id = self._cursor_mode()
        added = self._guard(self.session.toggle_evidence, mode_id, self.cursor)
        if added is not FAILED:
            self._refresh_labels()
            self._say(f"step {self.cursor} {'added to' if added else 'removed from'} the evidence of {mode_id}")

    def action_note(self) -> None:
        mode_id = self._cursor_mode()
        current = self.session.labels().get(mode_id)
        value = (current.note or "") if current else ""

        def save(text: str | None) -> None:
            if text is not None and self._guard(self.session.set_note, mode_id, text) is not FAILED:
                self._refresh_labels()
                self._say(f"note on {mode_id} saved")

        self.app.push_screen(TextPrompt(f"Note on {mode_id}", value), save)

    def action_quote(self) -> None:
        mode_id = self._cursor_mode()
        selected = self.get_selected_text() or ""
        current = self.session.labels().get(mode_id)
        value = selected or ((current.quote or "") if current else "")

        def save(text: str | None) -> None:
            if text is not None and self._guard(self.session.set_quote, mode_id, text) is not FAILED:
                self._refresh_labels()
                self._say(f"quote on {mode_id} saved")

        self.app.push_screen(TextPrompt(f"Quote for {mode_id}", " ".join(value.split())), save)

    def action_decide(self, decision: Decision) -> None:
        if self.blind:
            self._say("suggestions are hidden in blind mode")
            return
        mode_id = self._cursor_mode()
        suggestion = self.session.suggestion_for(mode_id)
        if suggestion is None:
            self._say(f"no suggestion on {mode_id}")
            return
        if self._guard(self.session.decide, suggestion, decision) is FAILED:
            return
        self._refresh_labels()
        self._say(f"{decision} the suggestion of {inert(suggestion.label.annotator)} on {mode_id}")

    def action_undo(self) -> None:
        what = self._guard(self.session.undo)
        if what is not FAILED:
            self._refresh_labels()
            self._say(f"undone: {what}")

    def action_done(self) -> None:
        labels = self.session.labels()
        body = Text()
        tagged = [lab for lab in labels.values() if lab.verdict == "present"]
        body.append("Tagged:\n" if tagged else "No mode tagged.\n", style="bold")
        known = set(self.taxonomy.mode_ids)
        for lab in tagged:
            # A tag made under another codebook keeps its id; this one has no name for it.
            name = self.taxonomy.mode(lab.mode_id).name if lab.mode_id in known else "(not in this codebook)"
            body.append(f"  {inert(lab.mode_id)} {name} at step {lab.onset_step}\n")
        absent = self.session.untagged_modes()
        if absent:
            body.append(f"\n{len(absent)} untagged modes will be recorded as absent:\n", style="bold")
            body.append("  " + " ".join(absent) + "\n")

        def finish(yes: bool | None) -> None:
            if yes and self._guard(self.session.mark_done) is not FAILED:
                self._refresh_labels()
                self._say("marked done · n goes to the next trajectory · u undoes")

        self.app.push_screen(ConfirmScreen("Mark this trajectory done?", body), finish)

    # ---- other screens

    def action_definition(self) -> None:
        self.app.push_screen(DefinitionScreen(self.taxonomy.modes[self.mode_cursor], self.taxonomy))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.taxonomy))

    def action_task(self) -> None:
        self.app.push_screen(TaskScreen(self.summary, blind=self.blind))

    def action_search(self) -> None:
        def find(text: str | None) -> None:
            if not text or not text.strip():
                return
            self.search_query = text
            hits = sorted(h.index for h in self.session.search(text))
            if not hits:
                self._say(f"no step matches {text!r}")
                return
            later = [i for i in hits if i > self.cursor]
            target = later[0] if later else hits[0]
            self._jump(target)
            self._show_step(highlight=text)
            self._say(f"match {hits.index(target) + 1} of {len(hits)} at step {target} · / enter: next")

        self.app.push_screen(TextPrompt("Search this trajectory", self.search_query), find)

    def action_trajectory(self, delta: int) -> None:
        self.app.step_trajectory(self.session.trajectory_id, delta)

    def action_compare(self) -> None:
        if self.blind:
            self._say("compare is not available in blind mode")
            return
        from annotator.tui.screens.compare import CompareScreen

        def jump(result: tuple[str, int | None, int | None] | None) -> None:
            if result is None:
                return
            mode_id, left, right = result
            self.compare_marks = {i: m for i, m in ((left, "A"), (right, "B")) if i is not None}
            self.mode_cursor = self.taxonomy.mode_ids.index(mode_id)
            self._refresh_labels()
            if left is not None or right is not None:
                self._jump(left if left is not None else right)
            def onset(i: int | None) -> str:
                return "—" if i is None else f"#{i}"

            self._say(f"{mode_id}: A onset {onset(left)}, B onset {onset(right)} · o jumps between them")

        self.app.push_screen(CompareScreen(self.session, self.taxonomy, self.cursor, self.app.adjudicate), jump)

    def action_back(self) -> None:
        self.session.close()
        self.app.pop_screen()
