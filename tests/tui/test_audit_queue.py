"""`mast annotate --tag audit-1 --blind`: the queue holds exactly the audit sample, and the work is recorded as blind."""

from __future__ import annotations

from datetime import UTC, datetime

from textual.widgets import DataTable

from annotator.store import open_db
from annotator.store.samples import Sample, SampleItem, save_sample
from annotator.tui.app import make_app


def _sample(path, ids: list[str]) -> None:
    db = open_db(path)
    save_sample(db, Sample(tag="audit-1", source="run:1", stratify=None, seed=7, size=len(ids), population=3,
                           strata={"all": (3, len(ids))}, filters={}, created_at=datetime.now(UTC)),
                [SampleItem(t, "all", len(ids) / 3) for t in ids])
    db.close()


async def test_the_blind_audit_queue_holds_the_sample_and_records_blind_work(tui_db):
    _sample(tui_db, ["t1", "t3"])
    app = make_app(tui_db, "alice", blind=True, tag="audit-1")
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.pause()
        assert app.queue_ids == ["t1", "t3"]
        assert app.screen.query_one(DataTable).row_count == 2
        app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("space", "1")
        await pilot.pause()
        row = app.db.execute("SELECT status, blind FROM review_state WHERE trajectory_id = 't1'"
                             " AND annotator = 'alice'").fetchone()
        assert row == ("in_progress", 1)
