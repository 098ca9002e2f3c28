"""JSON Lines written a block at a time: each line exactly what ``json_text`` writes for its row."""

from __future__ import annotations

import orjson
import pytest

from annotator.text import json_lines, json_text

ROWS = [
    {"quote": "plain"},
    {"quote": "C1 \x9b[31m and DEL \x7f"},
    {"note": "Latin-1 but no control: café °"},
    {"evidence": [1, 2], "extra": {"k": None}},
    {"quote": "\x85 next line"},
]


@pytest.mark.parametrize("block", [1, 2, 3, 4096])
def test_lines_match_json_text_row_by_row(block):
    text = "".join(json_lines(ROWS, block=block))
    assert text == "".join(json_text(r) + "\n" for r in ROWS)
    assert [orjson.loads(line) for line in text.splitlines()] == ROWS
    assert not any("\x7f" <= ch <= "\x9f" for ch in text)


def test_no_rows_no_text():
    assert list(json_lines([])) == []
