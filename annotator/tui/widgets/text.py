"""Turning untrusted trajectory text into Rich renderables that can never act as markup.

Everything shown from a trajectory goes through :func:`plain`: control characters are made
visible by ``annotator.text.inert`` and the result is a ``rich.text.Text`` (never parsed as markup),
so ``[@click=app.quit]`` or an ANSI escape in a step is displayed, not executed.
"""

from __future__ import annotations

import zlib

from rich.text import Text

from annotator.text import inert, one_line

#: Readable on dark and light themes; an agent keeps its colour across sessions (crc32 of the name).
AGENT_PALETTE = (
    "#5fafff",
    "#87d75f",
    "#ffaf5f",
    "#d787ff",
    "#5fd7d7",
    "#ff8787",
    "#d7d75f",
    "#af87ff",
    "#87afaf",
    "#ffafd7",
)


def plain(text: str | None, style: str = "") -> Text:
    """``text`` as inert plain text."""
    return Text(inert(text or ""), style=style, no_wrap=False)


def line(text: str | None, width: int, style: str = "") -> Text:
    """A one-line preview of ``text``, inert."""
    return Text(one_line(text or "", width), style=style)


def agent_colour(agent: str | None) -> str:
    if not agent:
        return "grey62"
    return AGENT_PALETTE[zlib.crc32(agent.encode()) % len(AGENT_PALETTE)]
