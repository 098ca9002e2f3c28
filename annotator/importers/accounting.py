"""Import accounting: every raw record an importer reads is mapped, folded or dropped, by name.

An annotator judges a failure on what the import shows. A trajectory that quietly lost most of
its records (progress lines kept as noise, a grader's verdict shown as an agent step, V1 events
read as V0 with empty arguments) looks like a success and is labelled as if it ran that way.
So each importer counts, in a :class:`Ledger` per trajectory, what became of each raw record of
its file (a line, an event, a message, a span): ``mapped`` to a step, the task or metadata;
``folded`` into another (a duplicate, a streamed fragment); ``dropped`` on purpose, with a named
reason. The import summary prints the folded and dropped records by reason, and the warnings.

Some warnings are the same for every format and are computed here, once, from the finished
trajectory (:func:`check`): a tool call without a name or arguments, a result linked to no call,
an empty task. ``mast import --strict`` fails a file with any warning.
"""

from __future__ import annotations

from collections import Counter

from annotator.models import Step, Trajectory

#: The kinds of warning, with what each means (``mast import`` prints the kind with the message).
WARNING_KINDS = {
    "unknown_kind": "a record of a kind the importer does not know, kept as a generic step",
    "tool_call_unnamed": "a tool call without a tool name",
    "tool_call_no_args": "a tool call without arguments",
    "result_unlinked": "a tool result linked to no tool call",
    "empty_task": "a trajectory without a task",
    "label": "a label or attribution the file carries that could not be kept as given",
    "incomplete": "part of what the format holds is missing or unfinished in the source",
    "duplicate_id": "a trajectory id given twice in one file: the later record replaces the earlier",
}


class Ledger:
    """Every raw record an importer reads, accounted for: mapped, folded or dropped."""

    def __init__(self) -> None:
        self.mapped_count = 0
        self.folded_by: Counter[str] = Counter()
        self.dropped_by: Counter[str] = Counter()
        #: (kind, message) -> how many times; the same message repeated is said once with its count.
        self.warnings: Counter[tuple[str, str]] = Counter()

    def mapped(self, n: int = 1) -> None:
        """``n`` raw record(s) became step(s), the task or metadata."""
        self.mapped_count += n

    def folded(self, reason: str, n: int = 1) -> None:
        """``n`` raw record(s) merged into another (a duplicate, a streamed fragment, a split response)."""
        if n:
            self.folded_by[reason] += n

    def dropped(self, reason: str, n: int = 1) -> None:
        """``n`` raw record(s) left out on purpose, for a named reason ("progress", "grader" ...)."""
        if n:
            self.dropped_by[reason] += n

    def warn(self, kind: str, message: str, n: int = 1) -> None:
        """Something the user should know about the import; ``kind`` is one of WARNING_KINDS."""
        if kind not in WARNING_KINDS:
            raise ValueError(f"unknown warning kind {kind!r}; choose from {', '.join(WARNING_KINDS)}")
        if n:
            self.warnings[(kind, message)] += n

    @property
    def read(self) -> int:
        """Raw records accounted for."""
        return self.mapped_count + self.folded_total + self.dropped_total

    @property
    def folded_total(self) -> int:
        return sum(self.folded_by.values())

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped_by.values())

    def merge(self, other: Ledger) -> None:
        """Add ``other``'s counts and warnings to this ledger (a file's total over its trajectories)."""
        self.mapped_count += other.mapped_count
        self.folded_by.update(other.folded_by)
        self.dropped_by.update(other.dropped_by)
        self.warnings.update(other.warnings)

    def warning_lines(self) -> list[str]:
        """One line per distinct warning, its count appended when it occurred more than once."""
        return [message if n == 1 else f"{message} ({n} times)" for (_, message), n in self.warnings.items()]

    def as_dict(self) -> dict:
        """The counts and warnings as plain data, for the summary and for tests."""
        return {
            "read": self.read,
            "mapped": self.mapped_count,
            "folded": dict(self.folded_by),
            "dropped": dict(self.dropped_by),
            "warnings": [{"kind": k, "message": m, "count": n} for (k, m), n in self.warnings.items()],
        }


class Checks:
    """The warnings every format shares, counted as the finished (linked) steps go by, so that a
    trajectory streamed into the store is checked without being held; :func:`check` for one held whole."""

    def __init__(self) -> None:
        self.unnamed = self.no_args = self.unlinked = 0

    def see(self, step: Step) -> None:
        if step.kind == "tool_call":
            self.unnamed += not _text(step.tool_name)
            self.no_args += not _text(step.tool_args)
        elif step.kind == "tool_result" and step.link is None:
            self.unlinked += 1

    def report(self, task: str | None, ledger: Ledger) -> None:
        """Put the counts, and whether the task is empty, into ``ledger``."""
        ledger.warn("tool_call_unnamed", "tool call without a tool name", self.unnamed)
        ledger.warn("tool_call_no_args", "tool call without arguments", self.no_args)
        ledger.warn("result_unlinked", "tool result linked to no tool call", self.unlinked)
        if not _text(task):
            ledger.warn("empty_task", "trajectory without a task")


def check(traj: Trajectory, ledger: Ledger) -> None:
    """The warnings every format shares, from the finished (linked) trajectory, into ``ledger``."""
    checks = Checks()
    for s in traj.steps:
        checks.see(s)
    checks.report(traj.task, ledger)


def _text(value: str | None) -> bool:
    return bool(value and value.strip())
