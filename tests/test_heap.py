"""The collector's settings during bulk work: set by the first block, given back by the last."""

from __future__ import annotations

import gc

from annotator.heap import older_objects_frozen


def test_overlapping_blocks_give_the_collector_back_once_the_last_ends():
    before = gc.get_threshold()
    first, second = older_objects_frozen(young=20_000), older_objects_frozen()
    with first:
        assert gc.get_threshold()[0] == 20_000 and gc.get_freeze_count() > 0
        second.__enter__()
    assert gc.get_threshold()[0] == 20_000 and gc.get_freeze_count() > 0  # the second is still open
    second.__exit__(None, None, None)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_failure_inside_gives_the_collector_back():
    before = gc.get_threshold()
    try:
        with older_objects_frozen(young=5_000):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
