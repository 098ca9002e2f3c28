"""JSON Lines made inert a block at a time: each line exactly what ``json_text`` writes for its row."""

from __future__ import annotations

import orjson

from annotator.text import inert_json, json_text

ROWS = [
    {"quote": "plain"},
    {"quote": "C1 \x9b[31m and DEL \x7f"},
    {"note": "Latin-1 but no control: café °"},
    {"evidence": [1, 2], "extra": {"k": None}},
    {"quote": "\x85 next line"},
]


def test_a_block_of_lines_matches_json_text_row_by_row():
    text = inert_json(b"".join(orjson.dumps(r, option=orjson.OPT_APPEND_NEWLINE) for r in ROWS))
    assert text == "".join(json_text(r) + "\n" for r in ROWS)
    assert [orjson.loads(line) for line in text.splitlines()] == ROWS
    assert not any("\x7f" <= ch <= "\x9f" for ch in text)
