"""line_matches / first_line_match find what ``finditer`` / ``search`` find for line-anchored patterns."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from annotator.importers import log_splitters
from annotator.importers.line_search import first_line_match, line_matches

LOGS = Path(__file__).parent / "fixtures" / "logs"

#: Every line-anchored pattern a splitter or a fact reader searches a whole log with.
PATTERNS = [
    getattr(log_splitters, name)
    for name in ("_CHATDEV", "_METAGPT_LOGURU", "_METAGPT_COMM", "_AG2", "_APPWORLD", "_HYPER", "_MAGENTIC", "_MANUS")
] + [rx for facts in log_splitters._FACTS.values() for rx in facts.values()]


def _expected(pattern: re.Pattern[str], text: str) -> list[tuple[int, dict]]:
    return [(m.start(), m.groupdict()) for m in pattern.finditer(text)]


def _found(pattern: re.Pattern[str], text: str) -> list[tuple[int, dict]]:
    return [(start, m.groupdict()) for start, m in line_matches(pattern, text)]


@pytest.mark.parametrize("log", sorted(LOGS.iterdir()), ids=lambda p: p.name)
@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:30])
def test_same_matches_as_finditer_on_every_log(pattern, log):
    text = log.read_text(encoding="utf-8")
    assert _found(pattern, text) == _expected(pattern, text)
    first = first_line_match(pattern, text)
    second = pattern.search(text)
    assert (first and first.groupdict()) == (second and second.groupdict())


@pytest.mark.parametrize(
    "text",
    ["", "\n", "a (to b):\n", "\n\na (to b):", "x\na (to b):\na (to b):\n\n", "a (to b):\na (to b):", "a (to b)"],
)
def test_edges_first_line_last_line_empty_lines(text):
    pattern = log_splitters._AG2
    assert _found(pattern, text) == _expected(pattern, text)


def test_a_match_that_ends_with_a_newline_leaves_the_next_line_to_match():
    pattern = re.compile(r"^(?P<k>\w+):\s*", re.M)  # \s* runs on into the next line's start
    text = "a: \nb: 1\n\nc:\n\n\nd: x\n"
    assert _found(pattern, text) == _expected(pattern, text)
    assert [g["k"] for _, g in _found(pattern, text)] == ["a", "b", "c", "d"]


def test_a_pattern_not_anchored_at_line_starts_is_refused():
    with pytest.raises(ValueError):
        line_matches(re.compile(r"x$", re.M), "x")
    with pytest.raises(ValueError):
        line_matches(re.compile(r"^x"), "x")
