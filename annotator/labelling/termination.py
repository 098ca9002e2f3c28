"""Termination signals: whether a message declares the task finished, found without a scan.

FM-1.5's test of every step (``rules.UnawareOfTermination``), and FM-1.3's of a bare termination
word (a repeated "TERMINATE" is an ending, not a repetition). A termination signal is an agent
declaring the task finished: a termination word said, not one quoted or that someone is told
to reply with.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from annotator.labelling.near_duplicates import MIN_CHARS, Message, whole_text

_TERMINATION = re.compile(r"\bterminate\b|\bfinal answer\b|<\s*final[_ ]answer\s*>", re.IGNORECASE)
#: Letters each match holds at a fixed distance from its start, with the letters it starts with:
#: "nate" 5 into "terminate" after "ter", "nal an" or "nal_an" 2 into "final answer" after "f".
#: None of them is i or s: IGNORECASE matches these letters with ASCII ones only (i also with ı
#: and İ, s with ſ), so an ASCII-lowered copy of the text finds every match's start.
_ANCHORS = ((b"nate", 5, b"ter"), (b"nal an", 2, b"f"), (b"nal_an", 2, b"f"))
#: A termination word that is talked about rather than said: quoted, or what someone is told to
#: reply with (AG2's Computer_terminal: 'let other participant reply me only with "TERMINATE"').
_QUOTES = "\"'“”‘’`"
_TOLD = re.compile(r"\b(?:reply|respond|answer|say|type|write|output|send)\b[^.\n]{0,40}$", re.IGNORECASE)


def is_termination(text: str, folded: str | None = None) -> bool:
    """Whether a message declares the task finished (a termination word said, not mentioned).

    A text that is not ASCII counts only where its case folding (``folded``, the normalised text
    where the caller has it) spells one of the words: casefold keeps a dotless ı, which
    IGNORECASE matches with i. It is folded only once a match is found, which is rare.

    A ``folded`` text rules every match out without reading ``text`` again unless it holds both
    "term" and "nate", or "nal an" or "nal_an": a match's letters other than its i and s are
    ASCII (see ``_ANCHORS``), so they are lowered and side by side in the folded text too (a
    space in a match is one, and stays one). Most messages end there.
    """
    if not text or (folded is not None and "nal an" not in folded and "nal_an" not in folded
                    and ("nate" not in folded or "term" not in folded)):
        return False
    for m in _termination_matches(text):
        before, after = text[max(0, m.start() - 50) : m.start()], text[m.end() : m.end() + 3]
        quoted = before.rstrip()[-1:] in _QUOTES and after.lstrip()[:1] in _QUOTES and before.strip()
        if not quoted and not _TOLD.search(before):
            if text.isascii():
                return True
            folded = text.casefold() if folded is None else folded
            return "terminate" in folded or "final" in folded
    return False


def _termination_matches(text: str) -> Iterator[re.Match]:
    """The matches ``_TERMINATION.finditer(text)`` gives, found without the scan.

    A pattern that opens on ``\\b`` is tried at every character, and IGNORECASE over a text that
    is not ASCII costs more again: this was the costliest test of a step. Every match's start is
    found from its ``_ANCHORS`` in the text encoded to ASCII (one byte a character, so positions
    are kept; other characters become ``?``) and lowercased, or, for ``<final_answer>``, at the
    ``<`` before it and whitespace; the pattern is only tried there, in order, each start after
    the end of the match before (as finditer does).
    """
    letters = text.encode("ascii", "replace").lower()
    starts = set()
    for anchor, offset, head in _ANCHORS:
        at = letters.find(anchor, offset)
        while at >= 0:
            start = bracket = at - offset
            if letters.startswith(head, start):
                starts.add(start)
                while bracket and text[bracket - 1].isspace():
                    bracket -= 1
                if bracket and text[bracket - 1] == "<":
                    starts.add(bracket - 1)
            at = letters.find(anchor, at + 1)
    end = 0
    for at in sorted(starts):
        if at >= end and (m := _TERMINATION.match(text, at)):
            end = m.end()
            yield m


def bare_termination(m: Message, content: str) -> bool:
    """Whether a message is a termination word alone (dots and spaces aside): a head longer than
    ``MIN_CHARS`` once stripped rules it out (folded, one is at most 16 characters long) without
    reading the rest of a long message, or trying the pattern."""
    core = m.text.strip(". ")
    if len(core) >= MIN_CHARS:
        return False
    if not m.whole:
        core = whole_text(m, content).strip(". ")
    return _TERMINATION.fullmatch(core) is not None
