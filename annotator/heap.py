"""Keeping the garbage collector off the objects a long piece of work did not make.

A bulk job (an import, a labelling run) allocates containers by the million; every run of them
sets off a collection, and every full collection walks all the objects of the process again (the
modules, pydantic's schemas, the client libraries), work that finds nothing to free.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Blocks open now, and the collector's thresholds before the first of them: the collector's
#: settings belong to the whole process, so only the last block to end gives them back (two
#: jobs of one process may overlap, in threads or in one event loop).
_open = 0
_thresholds: tuple[int, ...] = ()
_lock = threading.Lock()


@contextmanager
def older_objects_frozen(young: int | None = None) -> Iterator[None]:
    """Leave the objects that existed before the block out of the collector's passes while it
    runs (``gc.freeze``), and give them back afterwards. Only when they are collected changes:
    the block's own objects are collected as before, and the others again once it ends.

    ``young``: how many new containers may accumulate before the youngest generation is
    collected (Python's default is 700), for work whose objects each live a while (a request in
    flight): every collection walks all the young objects still alive, and finds little to free.
    A block opened while another is open keeps the collector as that one set it.
    """
    global _open, _thresholds
    with _lock:
        if not _open:
            _thresholds = gc.get_threshold()
            gc.freeze()
            if young is not None:
                gc.set_threshold(young, *_thresholds[1:])
        _open += 1
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if not _open:
                gc.set_threshold(*_thresholds)
                gc.unfreeze()
