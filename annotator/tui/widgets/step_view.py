"""The step view: the full content of the current step, scrollable, JSON and code highlighted.

Tool calls show the tool name and their arguments (pretty JSON) in a block of their own; tool
results say which tool and which call produced them. Content beyond ``views.HEAD_CHARS`` is cut
with a note (only that much is read from the database), so a multi-megabyte tool output never
slows down moving between steps. ``L`` shows the whole step: a content that long is wrapped as
plain text by slicing and turned into lines only as they scroll into view, because laying out
megabytes through Rich takes seconds (11 s for 4 MB). All text is inert (see ``widgets.text``);
Syntax never parses markup.
"""

from __future__ import annotations

import re

import orjson
from rich.cells import cell_len, chop_cells
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from annotator.models import Step
from annotator.text import KIND_ICONS, inert
from annotator.tui.widgets.text import agent_colour, plain
from annotator.views import HEAD_CHARS

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


def _restates_call(step: Step, shown: str) -> bool:
    """Whether a tool call's content only repeats its arguments (``name(args)`` or the bare
    arguments, as most importers write it), so the argument block already says it all."""
    if step.kind != "tool_call" or not step.tool_args:
        return False
    args = step.tool_args.strip()
    return shown.strip() in (args, f"{step.tool_name}({args})")


def render_step(step: Step, total: int) -> RenderableType:
    """The step view for ``step``, whose content may be the first part of ``total`` characters."""
    head = Text()
    head.append(f"#{step.index} ", style="bold")
    head.append(inert(step.agent or step.role or "?"), style=f"bold {agent_colour(step.agent)}")
    if step.recipient:
        head.append(" → " + inert(step.recipient))
    head.append(f"  {KIND_ICONS.get(step.kind, '•')} {step.kind}", style="grey70")
    if step.timestamp:
        head.append(f"  {step.timestamp:%Y-%m-%d %H:%M:%S}", style="grey50")
    parts: list[RenderableType] = [head]
    shown = step.content or ""
    cut = None
    if len(shown) < total:
        cut = Text(f"first {len(shown):,} of {total:,} characters shown · L shows all", style="bold #ffd75f")
        parts.append(cut)
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
    if shown and not _restates_call(step, shown):
        if step.tool_name and step.kind != "tool_call":
            parts.append(Panel(body(shown), border_style="#87d75f"))
        else:
            parts.append(body(shown))
    if cut is not None:
        parts.append(cut)
    return Group(*parts)


def wrap_plain(text: str, width: int) -> list[str]:
    """``text`` made inert and cut into lines of at most ``width`` cells, without Rich's layout."""
    out: list[str] = []
    for raw in inert(text).expandtabs(8).split("\n"):
        if not raw:
            out.append("")
        elif raw.isascii():
            out.extend(raw[i : i + width] for i in range(0, len(raw), width))
        else:
            out.extend(chop_cells(raw, width))
    return out


#: How a search's words are marked in the step.
_MATCH = Style(bgcolor="#ffd75f", color="black", bold=True)


def _styled(strip: Strip, start: int, end: int, style: Style) -> Strip:
    """``strip`` with cells ``start`` to ``end`` drawn in ``style`` on top."""
    marked = Segment.apply_style(strip.crop(start, end), post_style=style)
    return Strip.join([strip.crop(0, start), Strip(list(marked)), strip.crop(end)])


class StepView(ScrollView, can_focus=False):
    """Scrollable view of one step, rendered once per step into lines that scroll without redrawing."""

    DEFAULT_CSS = """
    StepView { height: 1fr; scrollbar-gutter: stable; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._step: Step | None = None
        self._total = 0
        self._lines: list[Strip | str] = []  # a str is a plain line of a long content, made a Strip when drawn
        self._width = 0
        self._base_style = Style()
        self._words: re.Pattern | None = None

    def show(self, step: Step | None, total: int = 0, highlight: str = "") -> None:
        """Show ``step``; its content may be the first part of ``total`` characters. The words of
        ``highlight`` (a search) are marked, and the view scrolls to the first line holding one."""
        self._step, self._total = step, max(total, len(step.content) if step else 0)
        words = re.findall(r"\w+", highlight)
        self._words = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE) if words else None
        self._layout_lines(self.scrollable_content_region.width)
        first = self.first_match()
        self.scroll_to(y=max(0, (first or 0) - 2), animate=False, immediate=True)

    def first_match(self) -> int | None:
        """The first line holding a highlighted word, if any."""
        if self._words is None:
            return None
        for i, line in enumerate(self._lines):
            if self._words.search(line if isinstance(line, str) else line.text):
                return i
        return None

    def on_resize(self) -> None:
        self._layout_lines(self.scrollable_content_region.width)

    def _layout_lines(self, width: int) -> None:
        self._width = width
        if width <= 0:
            self._lines = []
            return
        step = self._step
        long_body = step is not None and len(step.content) > HEAD_CHARS
        if step is None:
            renderable: RenderableType = Text("(no step)")
        elif long_body:
            note = Text(f"whole content, {len(step.content):,} characters, as plain text", style="bold #ffd75f")
            renderable = Group(render_step(step.model_copy(update={"content": ""}), 0), note)
        else:
            renderable = render_step(step, self._total)
        console = self.app.console
        lines = console.render_lines(renderable, console.options.update_width(width), pad=True)
        self._lines = [Strip(line, width) for line in lines]
        if long_body:
            self._lines += wrap_plain(step.content, width)
        # Short steps keep one virtual size (the viewport), so moving between them needs no layout.
        size = Size(width, max(len(self._lines), self.scrollable_content_region.height))
        if self.virtual_size != size:
            self.virtual_size = size
        self.refresh()

    def render_lines(self, crop):
        self._base_style = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        index = round(self.scroll_offset.y) + y
        if index >= len(self._lines):
            return Strip.blank(self._width, self._base_style)
        strip = self._line(index)
        if self._words is not None:
            text = strip.text
            for m in self._words.finditer(text):
                strip = _styled(strip, cell_len(text[: m.start()]), cell_len(text[: m.end()]), _MATCH)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(index)) is not None:
            start, end = span
            end = strip.cell_length if end == -1 else end
            strip = _styled(strip, start, end, self.screen.get_component_rich_style("screen--selection"))
        return strip.apply_style(self._base_style).apply_offsets(0, index)

    def _line(self, index: int) -> Strip:
        line = self._lines[index]
        if isinstance(line, str):
            return Strip([Segment(line)]).extend_cell_length(self._width)
        return line

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text (for a quote), as shown."""
        text = "\n".join((line if isinstance(line, str) else line.text).rstrip() for line in self._lines)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()
