"""The step list: one line per step, drawn lazily so a 10,000-step trajectory opens at once.

A line-API scroll view: only the lines on screen are rendered, and their previews come from
the session's ``step_previews`` in windows of ``WINDOW`` steps (the first characters of
each step's content), cached; full step contents are never read here.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from annotator.annotating.session import AnnotationSession
from annotator.text import KIND_ICONS, one_line
from annotator.tui.widgets.text import agent_colour
from annotator.views import StepPreview

WINDOW = 200
_CACHE_LIMIT = 20 * WINDOW
_AGENT_WIDTH = 14
_CURSOR = Style(bgcolor="#264f78", bold=True)


class StepList(ScrollView, can_focus=False):
    """Index, agent (stable colour), kind icon, marks and a one-line preview for each visible step."""

    DEFAULT_CSS = """
    StepList { height: 1fr; }
    """

    def __init__(self, session: AnnotationSession, count: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self._session = session
        self._cache: dict[int, StepPreview] = {}
        self.cursor = 0
        self.count = count
        self.marks: dict[int, str] = {}
        self.virtual_size = Size(0, count)
        self._base_style = Style()

    def show(self, count: int, cursor: int) -> None:
        """Show the first ``count`` steps with the cursor on ``cursor``, keeping it in view.

        Only the two lines whose cursor state changed are redrawn, unless the list scrolled
        or grew.
        """
        previous, self.cursor = self.cursor, cursor
        redraw_all = count != self.count
        self.count = count
        if self.virtual_size.height != count:
            self.virtual_size = Size(0, count)  # lines are cut to the view: no horizontal scrollbar
        top = round(self.scroll_offset.y)
        height = max(self.size.height, 1)
        if cursor < top:
            self.scroll_to(y=cursor, animate=False, immediate=True)
            redraw_all = True
        elif cursor >= top + height:
            self.scroll_to(y=cursor - height + 1, animate=False, immediate=True)
            redraw_all = True
        if redraw_all:
            self.refresh()
        else:
            width = self.scrollable_content_region.width
            self.refresh(Region(0, previous - top, width, 1), Region(0, cursor - top, width, 1))

    def set_marks(self, marks: dict[int, str]) -> None:
        """Marks (onset, evidence, cited step...) by step index; the list is redrawn only if they changed."""
        if marks != self.marks:
            self.marks = marks
            self.refresh()

    def preview(self, index: int) -> StepPreview | None:
        if index not in self._cache:
            if len(self._cache) > _CACHE_LIMIT:
                self._cache.clear()
            start = index - index % WINDOW
            for p in self._session.step_previews(start, WINDOW):
                self._cache[p.index] = p
        return self._cache.get(index)

    def render_lines(self, crop):
        self._base_style = self.rich_style
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = round(self.scroll_offset.y) + y
        if index >= self.count:
            return Strip.blank(width, self._base_style)
        p = self.preview(index)
        if p is None:
            return Strip.blank(width, self._base_style)
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{self.marks.get(index, ''):<2}", style="bold #ffd75f")
        text.append(f"{index:>5} ", style="grey62")
        agent = one_line(p.agent or "", _AGENT_WIDTH)
        text.append(f"{agent:<{_AGENT_WIDTH}} ", style=agent_colour(p.agent))
        icon = KIND_ICONS.get(p.kind, "•")
        text.append(icon + " " * max(0, 2 - cell_len(icon)) + " ")
        preview = one_line(p.preview, width)
        if p.tool_name:
            # A call's content often starts with its tool's name ("search({...})"): say it once.
            name = one_line(p.tool_name, 24)
            if preview.startswith(name):
                preview = preview[len(name) :]
            else:
                name += " "
            text.append(name, style="bold #ffaf5f")
        text.append(preview)
        segments = list(text.render(self.app.console))
        strip = Strip(segments).crop_extend(0, width, None)
        if index == self.cursor:
            strip = strip.apply_style(_CURSOR)
        return strip.apply_style(self._base_style)
