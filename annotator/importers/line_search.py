"""Finding a line-anchored pattern (``^...`` under ``re.M``) in a long log, fast.

Python's regex engine searches a pattern that opens with a literal character by scanning for
that character, but tries one that opens with an anchor at every position of the text: the
log splitters' turn patterns (``^[2023-...``, ``^assistant (to user):``) made the search of a
MAD log cost more than everything else its import does in Python. The same pattern with its
``^`` written as the newline that ends the line before is tried at line starts only, and finds
the same matches; the first line, which no newline precedes, is matched on its own.
"""

from __future__ import annotations

import re
from functools import cache


@cache
def _after_newline(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` with its leading ``^`` spelt ``\\n``."""
    if not pattern.pattern.startswith("^") or not pattern.flags & re.M:
        raise ValueError(f"not a line-anchored pattern: {pattern.pattern!r}")
    return re.compile("\n" + pattern.pattern[1:], pattern.flags)


def line_matches(pattern: re.Pattern[str], text: str) -> list[tuple[int, re.Match[str]]]:
    """(where the line starts, its match) for each match ``pattern.finditer(text)`` finds, in order.

    A match may begin with the newline before its line: read its named groups, and take the
    line's start from the pair, not from the match."""
    found: list[tuple[int, re.Match[str]]] = []
    pos = 0
    if (m := pattern.match(text)) is not None:
        found.append((0, m))
        pos = m.end()
    search = _after_newline(pattern).search
    while (m := search(text, pos - 1 if pos and text[pos - 1] == "\n" else pos)) is not None:
        found.append((m.start() + 1, m))
        # a match that ended with a newline leaves it to be the start of the next line
        pos = m.end() if m.end() > m.start() + 1 else m.end() + 1
    return found


def first_line_match(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    """The first match of ``pattern.search(text)``, as :func:`line_matches` gives it (named groups only)."""
    if (m := pattern.match(text)) is not None:
        return m
    return _after_newline(pattern).search(text)
