"""Reports multiply with one BLAS thread.

A report's matrices are tall and thin (up to a million trajectories × a few dozen columns):
the bootstrap's products, the logistic regressions' Hessians. OpenBLAS's threads wait for each
other by spinning, and on a machine whose cores are busy with other work a product split over
two threads is far slower than on one: a Logit Hessian over 100,000 × 22 took 2.7 s on two
threads against 0.065 s on one, at load average 12 on 2 cores. One thread gives away at most
the second core of an idle machine, and SQLite's readers use that one while the frame is read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from threadpoolctl import threadpool_limits

P = ParamSpec("P")
R = TypeVar("R")


def one_blas_thread(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with BLAS limited to one thread (restored afterwards)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)

    return run
