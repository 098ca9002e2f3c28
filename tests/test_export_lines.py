"""The JSONL export is written by SQLite: it holds the trajectories a report counts for every kind
of source, and every value comes back exactly (floats to the last digit, hostile text inert)."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pysqlite3.dbapi2 as newer_sqlite
import pytest
from tests.report_data import MODES, add_trajectory, label_all

from annotator.models import Label, LabelRun
from annotator.report import export
from annotator.report.frame import build
from annotator.report.output import atomic_file
from annotator.store import export_lines
from annotator.store.labels import add_labels, current_labels
from annotator.store.review import set_review
from annotator.store.runs import create_run
from annotator.taxonomy import load_taxonomy
from annotator.views import TrajectoryFilter

TAX = load_taxonomy()


@pytest.fixture
def sources(db):
    """Trajectories t00..t11 over two systems, labelled by a person (some not done), a rules run
    covering three modes (one trajectory only partly), an adjudication missing a mode on one
    trajectory, and an imported set on some trajectories."""
    for i in range(12):
        add_trajectory(db, f"t{i:02d}", system="S1" if i % 2 else "S2", outcome=("failure", "success", "unknown")[i % 3])
    for i in range(8):
        label_all(db, f"t{i:02d}", "alice", {"FM-1.1": i} if i % 3 else set(), done=i < 5)
    set_review(db, "t05", "alice", "in_progress")
    run = create_run(db, LabelRun(kind="rules", status="completed"))
    covered = ("FM-1.3", "FM-2.2", "FM-3.3")
    add_labels(db, [Label(trajectory_id=f"t{i:02d}", mode_id=m, annotator=run.annotator, verdict="absent",
                          provenance="rules") for i in range(10) for m in (covered[:2] if i == 4 else covered)])
    add_labels(db, [Label(trajectory_id=f"t{i:02d}", mode_id=m, annotator="adjudicated", verdict="present",
                          provenance="human") for i in range(6) for m in (MODES[:-1] if i == 2 else MODES)])
    for i in (1, 3, 9):
        label_all(db, f"t{i:02d}", "mad-llm", {"FM-2.3"}, provenance="imported", done=False)
    return db, ["alice", run.annotator, "adjudicated", "mad-llm"]


@pytest.mark.parametrize("flt", [None, TrajectoryFilter(system="S1"), TrajectoryFilter(outcome="failure")])
def test_export_holds_the_trajectories_a_report_counts(sources, flt):
    db, names = sources
    for name in names:
        rows = list(export.long_rows(db, [name], TAX, flt))
        frame = build(db, [name], TAX, flt)
        assert sorted({r["trajectory_id"] for r in rows}) == frame.ids.tolist(), name
        assert len(rows) == len(frame.mode_ids) * frame.n or name == "adjudicated", name


def test_export_rows_carry_the_stored_labels_and_trajectory_fields(sources):
    db, names = sources
    rows = list(export.long_rows(db, names, TAX))
    assert [r["trajectory_id"] for r in rows] == sorted(r["trajectory_id"] for r in rows)
    assert sorted(rows[0]) == sorted(export.LONG_COLUMNS)
    stored = {(lab.trajectory_id, lab.annotator, lab.mode_id): lab for lab in current_labels(db)}
    for r in rows:
        lab = stored[(r["trajectory_id"], r["source"], r["mode_id"])]
        assert {f: r[f] for f in ("verdict", "onset_step", "evidence_steps", "provenance", "extra")} == {
            f: getattr(lab, f) for f in ("verdict", "onset_step", "evidence_steps", "provenance", "extra")}
        assert r["created_at"] == lab.created_at.isoformat()
        i = int(r["trajectory_id"][1:])
        assert (r["system"], r["outcome"], r["n_steps"]) == ("S1" if i % 2 else "S2", ("failure", "success", "unknown")[i % 3], 10)


def test_exported_values_come_back_exactly(db, tmp_path):
    add_trajectory(db, "t0", title='=cmd|"/c calc"!A0 \x1b[31m\x7f\x9b\u2028 é 🎉')
    hostile = 'quote " backslash \\ nul \x00 tab \t newline \n esc \x1b del \x7f csi \x9b é 🎉'
    confidences = [0.1, 0.30000000000000004, 1 / 3, 2 / 3, 1.0, 0.0, 5e-324, 0.1 + 0.7]
    add_labels(db, [Label(trajectory_id="t0", mode_id=m, annotator="judge", verdict="present", confidence=c,
                          quote=hostile, note=hostile, rationale=hostile, evidence_steps=[1, 2], grounded=bool(j % 2),
                          extra={"votes": [c, None], hostile: {"nested": hostile}}, provenance="llm")
                    for j, (m, c) in enumerate(zip(MODES, confidences, strict=False))])
    text = export.render(db, "jsonl", ["judge"], TAX)
    assert not any(ch in text for ch in "\x00\x1b\x7f\x9b")
    with atomic_file(tmp_path / "out.jsonl") as fh:  # written as bytes: made inert the same way
        export.write_export(db, "jsonl", ["judge"], TAX, fh)
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == text
    rows = [orjson.loads(line) for line in text.split("\n")[:-1]]
    assert [r["confidence"] for r in rows] == confidences
    assert [r["grounded"] for r in rows] == [bool(j % 2) for j in range(len(confidences))]
    for r in rows:
        assert r["quote"] == r["note"] == r["rationale"] == hostile
        assert r["extra"] == {"votes": [r["confidence"], None], hostile: {"nested": hostile}}
        assert r["evidence_steps"] == [1, 2] and r["title"] == '=cmd|"/c calc"!A0 \x1b[31m\x7f\x9b\u2028 é 🎉'


def test_an_imported_row_is_stored_as_the_label_model_would_store_it(sources, tmp_path):
    """Rows as the export writes them are checked field by field without a model object; any
    other row goes through ``Label``: both give the stored form ``label_row`` gives."""
    from annotator.importers.importing import import_paths
    from annotator.importers.mast_export import _label, _stored_label
    from annotator.store import open_db
    from annotator.store.labels import label_row

    db, names = sources
    rows = list(export.long_rows(db, names, TAX))
    odd = {**rows[0], "created_at": "2026-12-01T11:39:15Z", "confidence": 1, "onset_step": "3", "evidence_steps": None}
    for row in [*rows, odd, {**rows[0], "created_at": "2026-12-01T11:39:15.5+00:00"}]:
        assert _stored_label(row) == label_row(_label(row))
    path = tmp_path / "odd.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in (odd, {**odd, "mode_id": "FM-1.2", "verdict": "maybe"})))
    result = import_paths(open_db(tmp_path / "fresh.db"), [path]).files[0]
    assert result.error.endswith("line 2: invalid verdict: Input should be 'present', 'absent' or 'unknown'"), result.error


@pytest.mark.parametrize("flt", [None, TrajectoryFilter(system="S1"), TrajectoryFilter(ids=["t03", "t01", "t09"])])
def test_a_trajectorys_lines_keep_the_sources_in_the_order_named_then_the_modes(sources, flt, tmp_path):
    """One query writes every source's lines: a trajectory's lines are together, its sources in
    the order they were named (not by name), each source's modes in codebook order; the file
    written as bytes holds exactly what the text form gives."""
    db, names = sources
    named = [names[3], names[0], names[2], names[1]]
    text = export.render(db, "jsonl", named, TAX, flt)
    rows = [orjson.loads(line) for line in text.splitlines()]
    keys = [(int(r["trajectory_id"][1:]), named.index(r["source"]), TAX.mode_ids.index(r["mode_id"])) for r in rows]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert {r["source"] for r in rows} == set(named)
    with atomic_file(tmp_path / "out.jsonl") as fh:
        export.write_export(db, "jsonl", named, TAX, fh, flt)
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == text


#: Every shape of filter the export's query can be given.
FILTERS = [TrajectoryFilter(), TrajectoryFilter(system="S1"), TrajectoryFilter(model="M1", benchmark="B"),
           TrajectoryFilter(outcome="failure", source_format="test"), TrajectoryFilter(ids=["t03", "t01", "t09"]),
           TrajectoryFilter(since=datetime(2020, 1, 1, tzinfo=UTC), until=datetime(2100, 1, 1, tzinfo=UTC)),
           TrajectoryFilter(search="step"), TrajectoryFilter(tag="audit"),
           TrajectoryFilter(review_status="done", annotator="alice")]


def _rules(names):
    return [export_lines.Finished(names[3]), export_lines.Finished(names[0], reviewed=True),
            export_lines.Finished(names[1], all_of=["FM-1.3", "FM-2.2"])]


@pytest.mark.parametrize("analyzed", [False, True])
@pytest.mark.parametrize("flt", FILTERS)
def test_the_export_query_reads_the_trajectories_by_their_id_with_no_sort_before_the_lines(sources, flt, analyzed):
    """Before SQLite 3.44 ``group_concat`` takes its rows in the order the loops give them: the
    trajectories outermost by the primary key's index (whatever name SQLite gave it), then the
    sources, then each source's labels, and no temporary B-tree re-sorting rows for the GROUP BY
    or the ORDER BY in between; with the planner's statistics gathered (ANALYZE) as without."""
    db, names = sources
    if analyzed:
        db.execute("ANALYZE")
    sql, params = export_lines.export_query(_rules(names), TAX.mode_ids, flt, ordered=False)
    assert "INDEXED BY" not in sql
    plan = [r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall() if r[1] == 0]
    assert not [step for step in plan if "TEMP B-TREE" in step], plan
    (primary,) = [r[1] for r in db.execute("PRAGMA index_list(trajectories)").fetchall() if r[3] == "pk"]
    loops = [step for step in plan if step.startswith(("SCAN", "SEARCH"))]
    assert [step.split()[1] for step in loops] == ["t", "src", "s", "l"], plan
    assert loops[0].startswith((f"SCAN t USING INDEX {primary}", f"SEARCH t USING INDEX {primary} (id=?)")), plan


@pytest.mark.parametrize("flt", FILTERS)
def test_a_group_concat_told_the_order_writes_the_same_bytes(sources, flt):
    """From SQLite 3.44 the query tells ``group_concat`` the order of a trajectory's lines; run by
    a newer SQLite on the same database it writes what the loops' order writes."""
    db, names = sources
    path = db.execute("PRAGMA database_list").fetchone()[2]
    pinned = b"".join(export_lines.export_lines(db, _rules(names), TAX.mode_ids, flt))
    assert pinned.count(b"\n") > 3 or flt.tag  # no trajectory of the fixture is tagged
    newer = newer_sqlite.connect(path)
    try:
        assert newer_sqlite.sqlite_version_info >= (3, 44)
        for ordered in (True, False):
            rows = newer.execute(*export_lines.export_query(_rules(names), TAX.mode_ids, flt, ordered=ordered))
            assert b"".join(r[0] for r in rows) == pinned, ordered
    finally:
        newer.close()
