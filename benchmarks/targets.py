"""A benchmark's targets, checked where they are printed: the run fails when one is missed.

``make bench`` is the place a figure is held against its target, so a missed target must show
as a failed benchmark, not only as a number to read.
"""

from __future__ import annotations


class Targets:
    """Collects ``at most`` / ``at least`` checks, and any other (``check``); ``exit_code`` is 1 if
    any was missed. Each check returns the text to print beside its figure."""

    def __init__(self) -> None:
        self.missed: list[str] = []

    def at_most(self, what: str, measured: float, limit: float, unit: str = "") -> str:
        return self.check(what, measured <= limit, f"target ≤ {limit:g}{unit}")

    def at_least(self, what: str, measured: float, limit: float, unit: str = "") -> str:
        return self.check(what, measured >= limit, f"target ≥ {limit:g}{unit}")

    def check(self, what: str, met: bool, target: str) -> str:
        """A target that is not a bound on one figure (an outcome, a strict bound): ``target`` says it."""
        if not met:
            self.missed.append(what)
        return f"{target}: {'met' if met else 'NOT MET'}"

    @property
    def exit_code(self) -> int:
        if self.missed:
            print("targets not met: " + "; ".join(self.missed))
        return 1 if self.missed else 0
