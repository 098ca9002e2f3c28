"""Hostile text made inert, and the plain-text forms of trajectories built on it (terminals, prompts, spreadsheets).

Trajectory content is written by models and tools. Before it reaches a terminal, every
control character except newline and tab is replaced by a visible escape (``\\x1b``), so an
ANSI sequence in a step is shown, never executed. Rich/Textual markup is never parsed here:
this module returns plain strings, and :func:`inert_console` is the one console every
command line output goes through (markup off, every printed segment made inert). Cells
written for spreadsheets go through :func:`spreadsheet_cell`, so that a title such as
``=HYPERLINK(...)`` stays text.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence
from typing import Any

import orjson
from rich.console import Console, ConsoleOptions, RenderableType, RenderHook, RenderResult
from rich.cells import cell_len
from rich.segment import Segment

from annotator.models import Step
from annotator.views import TrajectorySummary

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: What JSON may carry raw inside a string although a terminal acts on it: DEL and the C1 controls
#: (U+009B is a one-character CSI), as UTF-8 bytes (c2 80 to c2 9f). JSON escapes the others itself.
_JSON_RAW_CONTROL = re.compile(rb"\x7f|\xc2[\x80-\x9f]")

KIND_ICONS = {
    "message": "💬",
    "thought": "💭",
    "plan": "🗺",
    "tool_call": "🔧",
    "tool_result": "📤",
    "observation": "👁",
    "handoff": "🤝",
    "system": "⚙",
    "error": "❌",
    "final_answer": "🏁",
    "evaluation": "⚖",
    "log": "📜",
    "event": "•",
}


def inert(text: str) -> str:
    """``text`` with terminal control characters shown as escapes instead of acted upon."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)


def table_line(cells: Sequence[str], widths: Sequence[int], right: Container[int] = ()) -> str | None:
    """The line a Rich table without box or edge padding draws for ``cells`` in columns of these
    widths (two spaces apart, each cell padded to its width, to the right for the columns in
    ``right``), with control characters made inert; None when a cell would not fit its column on
    one line (Rich folds it there) or holds what Rich lays out itself (tabs, line and paragraph
    separators). A listing of a million rows is written this way: Rich takes
    about a millisecond to lay a row out."""
    parts = []
    for i, (cell, width) in enumerate(zip(cells, widths, strict=True)):
        text = inert(cell)
        size = cell_len(text)
        if size > width or not text.isprintable():  # a line break, a tab, a separator: Rich's to lay out
            return None
        pad = " " * (width - size)
        parts.append(pad + text if i in right else text + pad)
    return "  ".join(parts)


#: What makes a spreadsheet read a cell as a formula (OWASP, "CSV Injection"): a leading
#: ``=``, ``+``, ``-`` or ``@``, or a tab or carriage return before one of them.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as the text it is.

    A string that a spreadsheet would evaluate gets a leading ``'`` (OWASP's recommendation;
    the quote is shown by no spreadsheet and tells a reader the cell was neutralised), and
    control characters are made visible as in a terminal. Numbers are left alone, so a
    negative estimate stays a number; the JSON and JSONL forms keep every value exact.
    """
    if not isinstance(value, str):
        return value
    return "'" + inert(value) if value.startswith(_FORMULA_START) else inert(value)


class _Inert:
    """A renderable drawn as usual, with the text of every segment made inert."""

    def __init__(self, renderable: RenderableType):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.renderable, options):
            # Control segments are Rich's own cursor moves (a progress bar redrawing itself).
            yield segment if segment.control else Segment(inert(segment.text), segment.style)


class _InertHook(RenderHook):
    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Inert(r) for r in renderables]


def inert_console(**options: Any) -> Console:
    """A Rich console whose output carries no escape sequence or markup from the data.

    Markup and emoji codes are off, so a string printed or put in a table is shown as written
    (``[@click=app.quit]`` stays text), and a render hook makes the text of every segment
    inert, so an escape sequence in a title or a file name is shown as ``\\x1b`` whoever built
    the renderable. Only Rich's own styling reaches the terminal as escape sequences.
    """
    console = Console(markup=False, emoji=False, highlight=False, **options)
    console.push_render_hook(_InertHook())
    return console


def json_text(data: Any, option: int = 0) -> str:
    """``data`` as JSON (orjson, with its ``option`` flags) that carries no raw control character.

    The value is exactly what orjson writes: DEL and the C1 controls, which JSON allows raw,
    are written as ``\\u`` escapes, so the JSON printed to a terminal cannot drive it.
    """
    return inert_json(orjson.dumps(data, option=option))


def inert_json(data: bytes) -> str:
    """UTF-8 JSON text as a string that carries no raw control character: DEL and the C1
    controls, which JSON allows raw, become ``\\u`` escapes (see :func:`json_text`)."""
    return inert_json_bytes(data).decode()


def inert_json_bytes(data: bytes) -> bytes:
    """:func:`inert_json` for text that stays UTF-8 bytes (an export written to a file)."""
    # DEL is byte 7f, every C1 control starts with byte c2 in UTF-8: a byte search (memchr
    # speed) spares the scan of the text that has neither, nearly every block.
    if b"\x7f" not in data and b"\xc2" not in data:
        return data
    return _JSON_RAW_CONTROL.sub(lambda m: b"\\u%04x" % ord(m.group().decode()), data)


def one_line(text: str, width: int = 120) -> str:
    """A single-line preview: whitespace folded, control characters made inert, cut to width."""
    flat = " ".join(inert(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def step_title(step: Step) -> str:
    """'#12 WebSurfer · tool_call search' — the heading of a step wherever it is printed."""
    who = step.agent or step.role or "?"
    if step.recipient:
        who += f" → {step.recipient}"
    title = f"#{step.index} {who} · {step.kind}"
    if step.tool_name:
        title += f" {step.tool_name}"
    return inert(title)


def plain_step(step: Step) -> str:
    """A step as plain text: title line, then the content (tool arguments shown for calls)."""
    lines = [f"── {step_title(step)} " + "─" * 8]
    if step.kind == "tool_call" and step.tool_args:
        lines.append(f"arguments: {inert(step.tool_args)}")
    elif step.content:
        lines.append(inert(step.content))
    if step.link is not None:
        lines.append(f"(linked to step #{step.link})")
    return "\n".join(lines) + "\n\n"


def plain_header(t: TrajectorySummary, *, show_outcome: bool = True) -> str:
    """The few lines that introduce a trajectory."""
    facts = [
        ("id", t.id),
        ("title", t.title),
        ("system", t.system),
        ("model", t.model),
        ("benchmark", t.benchmark),
        ("format", t.source_format),
        ("steps", str(t.n_steps)),
        ("agents", ", ".join(t.agents)),
    ]
    if show_outcome:
        facts.append(("outcome", t.outcome + (f" (score {t.score:g})" if t.score is not None else "")))
    out = [f"{k:>9}: {inert(v)}" for k, v in facts if v]
    if t.task:
        out.append(f"{'task':>9}: {one_line(t.task, 300)}")
    return "\n".join(out) + "\n\n"
