"""The step view: the full content of the current step, scrollable, JSON and code highlighted.

Tool calls show the tool name and their arguments (pretty JSON) in a block of their own; tool
results say which tool and which call produced them. Content beyond ``SHOWN_CHARS`` is cut
with a note, and ``L`` shows the whole step, so a multi-megabyte tool output never slows down
moving between steps. All text is inert (see ``widgets.text``); Syntax never parses markup.
"""

from __future__ import annotations

import re

import orjson
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from annotator.models import Step
from annotator.render import KIND_ICONS, inert
from annotator.tui.widgets.text import agent_colour, plain

#: Characters of a step rendered at first; the rest on demand.
SHOWN_CHARS = 20_000
_FENCE = re.compile(r"```([\w+-]*)\n(.*?)```", re.DOTALL)
_THEME = "monokai"


def _json(text: str) -> str | None:
    """Pretty JSON when ``text`` is a JSON object or array, else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return orjson.dumps(orjson.loads(stripped), option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONDecodeError:
        return None


def _syntax(code: str, lexer: str) -> Syntax:
    return Syntax(inert(code), lexer, theme=_THEME, word_wrap=True, background_color="default")


def body(text: str) -> RenderableType:
    """Plain text, with JSON documents and fenced code blocks highlighted."""
    pretty = _json(text)
    if pretty is not None:
        return _syntax(pretty, "json")
    parts: list[RenderableType] = []
    pos = 0
    for match in _FENCE.finditer(text):
        if match.start() > pos:
            parts.append(plain(text[pos : match.start()]))
        parts.append(_syntax(match.group(2), match.group(1) or "text"))
        pos = match.end()
    if not parts:
        return plain(text)
    if pos < len(text):
        parts.append(plain(text[pos:]))
    return Group(*parts)


def render_step(step: Step, *, full: bool = False) -> RenderableType:
    """The whole step view for ``step``: heading, tool block, content, truncation note."""
    head = Text()
    head.append(f"#{step.index} ", style="bold")
    head.append(inert(step.agent or step.role or "?"), style=f"bold {agent_colour(step.agent)}")
    if step.recipient:
        head.append(" → " + inert(step.recipient))
    head.append(f"  {KIND_ICONS.get(step.kind, '•')} {step.kind}", style="grey70")
    if step.timestamp:
        head.append(f"  {step.timestamp:%Y-%m-%d %H:%M:%S}", style="grey50")
    parts: list[RenderableType] = [head]
    if step.kind == "tool_call" and (step.tool_name or step.tool_args):
        args = step.tool_args or ""
        pretty = _json(args)
        block = _syntax(pretty, "json") if pretty is not None else plain(args)
        title = Text("🔧 call ", style="bold") + plain(step.tool_name or "?", "bold #ffaf5f")
        parts.append(Panel(block, title=title, title_align="left", border_style="#ffaf5f"))
    elif step.tool_name:
        note = Text("📤 result of ", style="bold") + plain(step.tool_name, "bold #87d75f")
        if step.link is not None:
            note.append(f" (call at step #{step.link})", style="grey62")
        parts.append(note)
    content = step.content or ""
    shown = content if full or len(content) <= SHOWN_CHARS else content[:SHOWN_CHARS]
    if shown:
        if step.tool_name and step.kind != "tool_call":
            parts.append(Panel(body(shown), border_style="#87d75f"))
        else:
            parts.append(body(shown))
    if len(shown) < len(content):
        cut = Text(
            f"first {len(shown):,} of {len(content):,} characters shown · L shows all",
            style="bold #ffd75f",
        )
        parts[1:1] = [cut]
        parts.append(cut)
    return Group(*parts)


class StepView(VerticalScroll, can_focus=False):
    """Scrollable view of one step."""

    DEFAULT_CSS = """
    StepView { height: 1fr; }
    StepView > Static { width: 1fr; }
    """

    def compose(self):
        yield Static(id="step-body")

    def show(self, step: Step | None, *, full: bool = False) -> None:
        content = self.query_one("#step-body", Static)
        content.update(Text("(no step)") if step is None else render_step(step, full=full))
        self.scroll_home(animate=False)
