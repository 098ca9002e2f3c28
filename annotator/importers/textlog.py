"""Splitting unstructured agent logs into steps, one splitter per known system plus a fallback.

MAD's ``trace.trajectory`` (and MAD human traces for most systems) is raw log text: ChatDev
phase logs, MetaGPT role logs, HyperAgent INFO lines... Each splitter finds the turn
delimiters of its system and yields one ``message`` step per block with the agent its
markers name; :func:`split_log` picks the splitter for a system name and falls back to
blank-line blocks, so no text is ever dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from annotator.models import Step

Splitter = Callable[[str], list[Step]]

_SPLITTERS: dict[str, Splitter] = {}


def splitter(*systems: str) -> Callable[[Splitter], Splitter]:
    """Register a splitter for the given system names (matched case-insensitively)."""

    def inner(fn: Splitter) -> Splitter:
        for name in systems:
            _SPLITTERS[_key(name)] = fn
        return fn

    return inner


def _key(system: str) -> str:
    return re.sub(r"[^a-z0-9]", "", system.lower())


def split_log(text: str, system: str | None = None) -> list[Step]:
    """Steps of a raw log: the system's splitter if it finds turns, else blank-line blocks."""
    fn = _SPLITTERS.get(_key(system or ""))
    steps = fn(text) if fn else []
    if len(steps) <= 1:
        steps = split_blocks(text)
    return steps


def split_blocks(text: str) -> list[Step]:
    """The fallback: one step per blank-line separated block, long runs of short lines kept together."""
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    return [Step(index=i, id=f"block[{i}]", kind="log", content=b.strip("\n")) for i, b in enumerate(blocks)]


def split_on(pattern: re.Pattern[str], text: str, agent_of: Callable[[re.Match[str]], str | None],
             kind: str = "message") -> list[Step]:
    """Split ``text`` at every match of ``pattern``; the text before the first match is a log step."""
    steps: list[Step] = []
    matches = list(pattern.finditer(text))
    if not matches:
        return steps
    preamble = text[: matches[0].start()].strip("\n")
    if preamble.strip():
        steps.append(Step(index=0, id="preamble", kind="log", content=preamble))
    for n, m in enumerate(matches):
        end = matches[n + 1].start() if n + 1 < len(matches) else len(text)
        block = text[m.start() : end].strip("\n")
        steps.append(Step(index=len(steps), id=f"turn[{n}]", agent=agent_of(m), kind=kind, content=block))
    return steps


# MetaGPT writes either loguru lines ("2025-01-17 11:40:27.872 | INFO | ... - Alice(SimpleCoder): ...")
# or a communication log ("[2025-03-27 01:21:03] FROM: Human TO: {...}" / "NEW MESSAGES:" + "Role: ").
_METAGPT_LOGURU = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \| \w+\s*\| [^\n]*? - (?:(?P<name>\w+)\((?P<role>\w+)\))?",
    re.M,
)
_METAGPT_COMM = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] (?:FROM: (?P<from>\S+)|NEW MESSAGES:)", re.M)
_METAGPT_SPEAKER = re.compile(r"^(?P<who>[A-Z][A-Za-z]+):\s*$", re.M)


@splitter("MetaGPT")
def split_metagpt(text: str) -> list[Step]:
    if _METAGPT_COMM.search(text):
        steps = split_on(_METAGPT_COMM, text, lambda m: m["from"])
        for s in steps:
            if s.agent is None and s.kind == "message":
                who = _METAGPT_SPEAKER.search(s.content)
                s.agent = who["who"] if who else None
        return steps
    return split_on(_METAGPT_LOGURU, text, lambda m: m["role"] or m["name"])
