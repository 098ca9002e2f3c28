"""The taxonomy panel: every mode grouped by category, with its key and its state for the annotator.

Own labels (present with onset, absent, accepted from a run), machine suggestions (confidence,
cited steps, ungrounded flag, decision), other people's tags and decisive-error attributions
(Who&When's "which agent, which step, why") are drawn in distinct styles; in blind mode only
the annotator's own labels are passed in.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from dataclasses import dataclass, field

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from annotator.annotating.session import Suggestion
from annotator.label_sources import parse
from annotator.models import Attribution, Label
from annotator.taxonomy import Taxonomy
from annotator.text import inert, one_line

#: Columns for a mode name: the longest MAST name fits (a narrow terminal wraps it).
NAME_WIDTH = 33
#: Columns of a mode's line before its name: key and code.
_LEAD = 9
#: Columns of a mode's line besides its name: key, code, and the verdict with onset and evidence.
_LINE_EXTRA = 21


@dataclass
class PanelState:
    """What the panel shows; built by the replay screen from the annotation session."""

    taxonomy: Taxonomy
    cursor: str
    labels: dict[str, Label] = field(default_factory=dict)
    suggestions: dict[str, list[Suggestion]] = field(default_factory=dict)
    others: dict[str, list[Label]] = field(default_factory=dict)
    attributions: list[Attribution] = field(default_factory=list)


def _own(label: Label | None) -> Text:
    if label is None:
        return Text("·", style="grey50")
    if label.verdict == "absent":
        return Text("absent", style="grey62")
    out = Text(f"● @{label.onset_step}", style="bold #ff5f5f")
    if label.evidence_steps:
        out.append(" +" + ",".join(str(s) for s in label.evidence_steps), style="#ff8787")
    return out


def _suggestion(s: Suggestion) -> Text:
    run = parse(s.label.annotator).run_id
    kind = s.run.kind if s.run else s.label.provenance
    out = Text(f"    ◇ run {run} {kind}", style="#d7afff")
    if s.label.confidence is not None:
        out.append(f" {s.label.confidence:.2f}", style="#d7afff")
    if s.cited_steps:
        out.append(" → " + " ".join(f"#{i}" for i in s.cited_steps), style="#d7afff")
    if s.label.grounded is False:
        out.append(" ⚠ ungrounded", style="bold #ffaf00")
    if s.decision:
        out.append(f" [{s.decision}]", style="grey62")
    else:
        out.append(" A/X", style="grey50")
    return out


def _reasons(s: Suggestion, width: int) -> Text:
    """Why the run suggests the mode (a rule's finding, a judge's rationale) and the quote it
    cites, wrapped: shown for the mode under the cursor."""
    out = Text()
    for prefix, value in (("why: ", s.label.rationale), ("quote: ", s.label.quote and f'"{s.label.quote}"')):
        if value:
            lead = 6 + len(prefix)
            for i, chunk in enumerate(textwrap.wrap(one_line(value, 600), max(10, width - lead))):
                out.append(("      " + prefix if i == 0 else " " * lead) + chunk + "\n", style="italic #d7afff")
    return out


def _others(others: list[Label], width: int) -> Text:
    """Other people's verdicts on one line: who tagged it (and where), how many said absent."""
    tagged = [o.annotator + (f" @{o.onset_step}" if o.onset_step is not None else "") for o in others if o.verdict == "present"]
    rest = Counter(o.verdict or "cleared" for o in others if o.verdict != "present")
    parts = (["● " + ", ".join(tagged)] if tagged else []) + [f"{n} {verdict}" for verdict, n in rest.items()]
    return Text("    others: " + one_line(" · ".join(parts), width - 12), style="#87afaf")


def render_panel(state: PanelState, width: int = NAME_WIDTH + _LINE_EXTRA) -> Text:
    """The panel for ``width`` columns: mode names and one-line details are cut to fit."""
    out = Text()
    tax = state.taxonomy
    for cat in tax.categories:
        out.append(f"{cat.id} {cat.name}\n", style="bold underline")
        for mode in tax.modes_in(cat.id):
            own = state.labels.get(mode.id)
            verdict = _own(own)
            # The name takes what the verdict leaves; one that does not fit wraps, never cut.
            name_width = max(8, min(NAME_WIDTH, width - _LEAD - 1 - verdict.cell_len))
            names = textwrap.wrap(mode.name, name_width) or [""]
            line = Text()
            line.append(f" {mode.hotkey} ", style="bold reverse")
            line.append(f" {mode.code:<4} ", style="bold")
            line.append(names[0].ljust(name_width))
            line.append(" ")
            line.append_text(verdict)
            for more in names[1:]:
                line.append("\n" + " " * _LEAD + more)
            if mode.id == state.cursor:
                line.stylize("on #3a3a5f")
            out.append_text(line)
            out.append("\n")
            if own is not None and own.provenance == "accepted":
                out.append(f"    accepted from run {own.run_id}\n", style="#d7afff")
            if own is not None and (own.note or own.quote):
                detail = " · ".join(x for x in (own.quote and f'"{own.quote}"', own.note and f"note: {own.note}") if x)
                out.append(Text("    " + one_line(detail, width - 4) + "\n", style="italic grey70"))
            for s in state.suggestions.get(mode.id, []):
                out.append_text(_suggestion(s))
                out.append("\n")
                if mode.id == state.cursor:
                    out.append_text(_reasons(s, width))
            others = state.others.get(mode.id, [])
            if others:
                out.append_text(_others(others, width))
                out.append("\n")
        out.append("\n")
    for a in state.attributions:
        out.append(Text("✗ decisive error", style="bold #ff8787"))
        out.append(Text(f" ({inert(a.annotator)})\n", style="grey62"))
        where = f"step {a.step}" if a.step is not None else f"step {inert(a.step_as_given or '?')} (not in the trajectory)"
        out.append(Text(f"  {where} · {inert(a.agent or '?')}\n", style="#ff8787"))
        if a.reason:
            out.append(Text("  " + inert(a.reason) + "\n", style="italic grey70"))
    return out


class TaxonomyPanel(VerticalScroll, can_focus=False):
    """58 columns, or 48% of a narrow terminal so that the steps keep the larger part."""

    DEFAULT_CSS = """
    TaxonomyPanel { width: 58; max-width: 48%; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._state: PanelState | None = None

    def compose(self):
        yield Static(id="taxonomy-body")

    def show(self, state: PanelState) -> None:
        """Draw ``state``; the same state as shown already is not drawn again (nor scrolled)."""
        if state != self._state:
            self._state = state
            self._draw()

    def _draw(self) -> None:
        if self._state is not None:
            width = self.scrollable_content_region.width or NAME_WIDTH + _LINE_EXTRA
            self.query_one("#taxonomy-body", Static).update(render_panel(self._state, width))

    def on_resize(self) -> None:
        self._draw()
