"""Rows bound for SQLite: Nones stored as NULL, many rows a statement in their order."""

from __future__ import annotations

import sqlite3

import pytest

from annotator.store.binding import ROWS_PER_STATEMENT, bound, insert_rows


def test_a_none_is_stored_as_null_and_other_values_as_they_are():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a, b, c)")
    conn.execute("INSERT INTO t VALUES (?, ?, ?)", bound((None, 1.5, "x")))
    assert conn.execute("SELECT a IS NULL, b, c FROM t").fetchone() == (1, 1.5, "x")


@pytest.mark.parametrize("n", [0, 1, ROWS_PER_STATEMENT - 1, ROWS_PER_STATEMENT, 3 * ROWS_PER_STATEMENT + 7])
def test_insert_rows_keeps_every_row_in_order(n):
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, a, b, c)")
    rows = [(i, None if i % 3 else f"t{i}", [None, 0.5, b"\x00"][i % 3]) for i in range(n)]
    insert_rows(conn, "t", "a, b, c", rows)
    assert conn.execute("SELECT a, b, c FROM t ORDER BY seq").fetchall() == rows
