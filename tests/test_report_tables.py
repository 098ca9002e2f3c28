"""The report's reads folded a block at a time by SQLite (``store.report_tables``) give exactly what
reading one row per trajectory gives: hostile titles and ids, several blocks, filters, review
states, and rows SQLite might fold out of key order."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.store import report_tables
from annotator.store.report_tables import DONE, IN_PROGRESS, NO_REVIEW, Verdicts, trajectory_columns, verdict_rows
from annotator.store.review import set_review
from annotator.taxonomy import load_taxonomy
from annotator.views import TrajectoryFilter
from tests.report_data import add_trajectory, label_all

MODES = load_taxonomy().mode_ids
HOSTILE = ['quote " and \\ backslash', "nul \x00 inside", "escape \x1b[31m red", "line\u2028sep\nnew",
           "🙂 emoji and ünïcödé", "", "=cmd|' /C calc'!A0", "x" * 5000, "<script>alert(1)</script>", "\x7f\x85 c1"]


def _row_by_row(db, flt: TrajectoryFilter | None, reviewers: list[str]) -> dict:
    """The columns as one query read row by row gives them (what the fold replaced)."""
    where, params = report_tables._where(flt or TrajectoryFilter())
    rows = db.execute(
        "SELECT t.id, t.title, t.system, t.model, t.benchmark, t.outcome, t.n_steps FROM trajectories t WHERE "
        + " AND ".join(where) + " ORDER BY t.id", params).fetchall()
    status = {r: dict(db.execute("SELECT trajectory_id, status FROM review_state WHERE annotator = ?", [r]).fetchall())
              for r in reviewers}
    codes = {None: NO_REVIEW, "done": DONE, "in_progress": IN_PROGRESS}
    return {
        "ids": [r[0] for r in rows], "titles": [r[1] for r in rows],
        "groups": [[r[i] or "-" for r in rows] for i in (2, 3, 4)],
        "outcome": [{"failure": 1, "success": 0}.get(r[5], -1) for r in rows], "n_steps": [r[6] for r in rows],
        "reviews": {name: [codes[status[name].get(r[0])] for r in rows] for name in reviewers},
    }


def _as_read(cols: report_tables.TrajectoryColumns) -> dict:
    return {
        "ids": cols.ids.tolist(), "titles": cols.titles.tolist(),
        "groups": [np.asarray(cols.levels[c], dtype=object)[cols.codes[c]].tolist() if len(cols.ids) else []
                   for c in report_tables.GROUP_COLUMNS],
        "outcome": cols.outcome.tolist(), "n_steps": cols.n_steps.tolist(),
        "reviews": {name: codes.tolist() for name, codes in cols.reviews.items()},
    }


@pytest.fixture
def hostile_db(db):
    for i, title in enumerate(HOSTILE * 3):
        tid = add_trajectory(db, f"t{i:03d} {title[:8]}", title=title, outcome=("failure", "success")[i % 2],
                             system=("S1", "", "S 2 \"q\"")[i % 3], model=title[:5] or "M", steps=i % 4)
        if i % 4:
            label_all(db, tid, "alice", {MODES[i % len(MODES)]: i % 3}, done=i % 4 == 1)
            if i % 4 == 2:
                set_review(db, tid, "alice", "in_progress")
    return db


@pytest.mark.parametrize("block", [report_tables.BLOCK, 7, 1])
@pytest.mark.parametrize("flt", [None, TrajectoryFilter(outcome="failure"), TrajectoryFilter(system="S1"),
                                 TrajectoryFilter(ids=["t003 escape \x1b", "t001 nul \x00 in", "none"])])
def test_columns_are_those_read_row_by_row(hostile_db, monkeypatch, block, flt):
    monkeypatch.setattr(report_tables, "BLOCK", block)
    got = _as_read(trajectory_columns(hostile_db, flt, ["alice", "bob"]))
    assert got == _row_by_row(hostile_db, flt, ["alice", "bob"])
    if flt is None:
        assert set(got["titles"]) >= set(HOSTILE) - {""}  # an empty title is stored as the id


def test_no_trajectories(db):
    cols = trajectory_columns(db, None, ["alice"])
    assert len(cols.ids) == 0 and cols.reviews["alice"].shape == (0,) and cols.levels["system"] == []


@pytest.mark.parametrize("block", [report_tables.BLOCK, 5])
def test_verdicts_over_blocks_and_ranges_are_the_same(hostile_db, monkeypatch, block):
    whole = verdict_rows(hostile_db, "alice", MODES)
    monkeypatch.setattr(report_tables, "BLOCK", block)
    ids = whole.tids.tolist()
    parts = [verdict_rows(hostile_db, "alice", MODES, lo, hi) for lo, hi in ((None, ids[4]), (ids[4], ids[9]),
                                                                                 (ids[9], None))]
    joined = Verdicts.join(parts)
    assert joined.tids.tolist() == ids and joined.total.tolist() == whole.total.tolist()
    assert joined.cells.tolist() == whole.cells.tolist() and joined.absent.tolist() == whole.absent.tolist()


def test_verdicts_out_of_key_order_are_sorted_with_their_cells():
    """SQLite does not promise the order of an aggregate's values: rows folded in another order
    come back sorted, each cell still pointing at its own trajectory."""
    tids = np.asarray(["c", "a", "d", "b"])
    total, absent = np.asarray([3, 3, 3, 3], np.int16), np.asarray([1, 2, 3, 2], np.int16)
    cells = np.asarray([[0, 1, 5], [0, 3, -1], [1, 7, 2], [3, 9, 0]])
    read = Verdicts(tids, total, absent, cells, 4).in_order()
    assert read.tids.tolist() == ["a", "b", "c", "d"] and read.absent.tolist() == [2, 2, 1, 3]
    assert sorted(map(tuple, read.cells.tolist())) == [(0, 7, 2), (1, 9, 0), (2, 1, 5), (2, 3, -1)]
    assert read.outside_codebook == 4
    inorder = Verdicts(read.tids, read.total, read.absent, read.cells)
    assert inorder.in_order() is inorder
