"""Comparing two annotators on one trajectory: who labelled it, and the modes they see differently.

Pure reads over the current labels, shared by the TUI's compare screen and anything else that
puts two sets of labels side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sqlite_utils import Database

from annotator.models import Label
from annotator.store import labels as label_store
from annotator.taxonomy import Taxonomy


@dataclass(frozen=True)
class Disagreement:
    """A mode two annotators see differently: different verdicts, or the same verdict at other onsets."""

    mode_id: str
    kind: Literal["verdict", "onset"]
    left: Label | None
    right: Label | None

    @property
    def onsets(self) -> tuple[int | None, int | None]:
        return (
            self.left.onset_step if self.left else None,
            self.right.onset_step if self.right else None,
        )


def disagreements(db: Database, trajectory_id: str, left: str, right: str, taxonomy: Taxonomy) -> list[Disagreement]:
    """Modes on which ``left`` and ``right`` disagree for one trajectory, in codebook order.

    No label counts as "not present", so a tag facing silence is a verdict disagreement. Onsets
    are compared only when both sides give one (datasets labelled per trace carry none).
    """
    current = label_store.current_labels(db, trajectory_id)
    by = {(lab.annotator, lab.mode_id): lab for lab in current}
    out: list[Disagreement] = []
    for mode_id in taxonomy.mode_ids:
        a, b = by.get((left, mode_id)), by.get((right, mode_id))
        a_present = a is not None and a.verdict == "present"
        b_present = b is not None and b.verdict == "present"
        if a_present != b_present:
            out.append(Disagreement(mode_id, "verdict", a, b))
        elif a_present and None not in (a.onset_step, b.onset_step) and a.onset_step != b.onset_step:
            out.append(Disagreement(mode_id, "onset", a, b))
    return out


def labelled_by(db: Database, trajectory_id: str) -> list[str]:
    """Everyone (people and runs) with a current label on the trajectory."""
    return sorted({lab.annotator for lab in label_store.current_labels(db, trajectory_id)})
