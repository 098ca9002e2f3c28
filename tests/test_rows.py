"""The one row decoder: columns matched to fields by name, JSON decoded, NULL JSON to the default."""

from __future__ import annotations

import sqlite3

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from annotator.models import Label
from annotator.store.labels import add_label, get_label
from annotator.store.rows import decode, decode_one, json_columns, select


class Row(BaseModel):
    index: int
    name: str | None
    tags: list[str] = Field(default_factory=lambda: ["default"])


@pytest.fixture
def conn():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (idx INTEGER, name TEXT, tags TEXT)")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?)", [(0, "a", '["x", "y"]'), (1, None, None), (2, "c", "")])
    return conn


def test_select_names_every_field_and_aliases_renamed_columns():
    assert select(Row, renamed={"index": "idx"}) == 'idx AS "index", name, tags'
    assert select(Row, table="t", renamed={"index": "idx"}, omit=("tags",)) == 't.idx AS "index", t.name'
    assert select(Row, table="t", renamed={"name": "upper(t.name)"}) == 't.index, upper(t.name) AS "name", t.tags'


def test_decode_matches_columns_by_name_whatever_their_order(conn):
    rows = decode(conn.execute('SELECT tags, name, idx AS "index" FROM t ORDER BY idx'), Row, json_columns("tags"))
    assert rows == [Row(index=0, name="a", tags=["x", "y"]), Row(index=1, name=None), Row(index=2, name="c")]
    assert rows[1].tags == ["default"]  # NULL and empty JSON leave the model's default


def test_decode_one_is_none_without_a_row(conn):
    assert decode_one(conn.execute(f"SELECT {select(Row, renamed={'index': 'idx'})} FROM t WHERE idx = 9"), Row) is None


def test_a_column_the_model_does_not_know_is_an_error_not_a_shifted_field(conn):
    class Strict(Row):
        model_config = ConfigDict(extra="forbid")

    with pytest.raises(ValidationError, match="surplus"):
        decode(conn.execute('SELECT idx AS "index", name, tags, 1 AS surplus FROM t'), Strict)


def test_a_label_round_trips_through_the_decoder(db):
    label = Label(trajectory_id="t1", mode_id="FM-1.1", annotator="alice", verdict="present", onset_step=2,
                  evidence_steps=[3, 4], grounded=False, extra={"votes": [1, 0]}, confidence=0.5)
    db.execute("INSERT INTO trajectories (id, schema_version, source_format, content_hash, imported_at, n_steps)"
               " VALUES ('t1', 1, 'jsonl', '', '2026-01-01', 0)")
    stored = get_label(db, add_label(db, label))
    assert stored.model_dump(exclude={"id"}) == label.model_dump(exclude={"id"})
    assert stored.grounded is False
