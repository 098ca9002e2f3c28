"""Adjudication: deciding, mode by mode, the disagreements of two people into a gold set.

The decisions are a label source of their own, ``adjudicated`` (``label_sources.ADJUDICATED``),
read by ``report``, ``agreement`` and ``export`` like any other. Each decision is a label
under that name whose ``extra`` keeps its provenance: who decided, between which two people,
whose verdict was taken (``a``, ``b`` or ``own``) and the reason. When the last disagreement
of a trajectory is decided, the modes the two agreed on are written too (as A has them), so
that the trajectory counts as finished with a verdict on every mode. Every decision commits
at once and can be undone (append-only retractions, as everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sqlite_utils import Database

from annotator.annotating.compare import Disagreement, disagreements
from annotator.errors import AnnotatorError
from annotator.label_sources import ADJUDICATED
from annotator.models import Label
from annotator.store import labels as label_store
from annotator.store import review
from annotator.store.db import write
from annotator.taxonomy import Taxonomy

Choice = Literal["a", "b", "own"]


class NothingToDecide(AnnotatorError):
    """An adjudication was asked for where the two people do not disagree, or have not both finished."""


def to_adjudicate(db: Database, left: str, right: str, taxonomy: Taxonomy) -> list[str]:
    """Trajectories both people finished and disagree on somewhere, by id."""
    both = sorted(review.finished_by(db, left) & review.finished_by(db, right))
    return [t for t in both if disagreements(db, t, left, right, taxonomy)]


@dataclass
class Adjudication:
    """One adjudicator deciding the disagreements of ``left`` (A) and ``right`` (B) on one trajectory."""

    db: Database
    trajectory_id: str
    adjudicator: str
    left: str
    right: str
    taxonomy: Taxonomy
    _undo: list[list[int]] = field(default_factory=list)

    def disagreements(self) -> list[Disagreement]:
        return disagreements(self.db, self.trajectory_id, self.left, self.right, self.taxonomy)

    def decisions(self) -> dict[str, Label]:
        """The decisions standing on this trajectory, per mode id."""
        return {lab.mode_id: lab for lab in label_store.current_labels(self.db, self.trajectory_id, ADJUDICATED)}

    def pending(self) -> list[Disagreement]:
        """Disagreements not decided yet, in codebook order."""
        decided = self.decisions()
        return [d for d in self.disagreements() if d.mode_id not in decided]

    def decide(self, mode_id: str, choice: Choice, reason: str, *, verdict: str | None = None,
               onset_step: int | None = None) -> Label:
        """Take A's or B's verdict on ``mode_id``, or your own (``verdict`` with ``onset_step``)."""
        by_mode = {d.mode_id: d for d in self.disagreements()}
        if mode_id not in by_mode:
            raise NothingToDecide(f"{self.left} and {self.right} agree on {mode_id}")
        d = by_mode[mode_id]
        source = {"a": d.left, "b": d.right}.get(choice)
        if choice == "own":
            if verdict not in ("present", "absent"):
                raise AnnotatorError("your own decision needs a verdict: present or absent")
            base = {"verdict": verdict, "onset_step": onset_step if verdict == "present" else None}
        elif source is None or source.verdict != "present":
            base = {"verdict": "absent", "onset_step": None}
        else:
            base = {"verdict": "present", "onset_step": source.onset_step, "evidence_steps": source.evidence_steps,
                    "quote": source.quote, "note": source.note}
        label = self._label(mode_id, choice, reason, **base)
        new = [label]
        if [d.mode_id for d in self.pending()] == [mode_id]:  # the last open one: write what the two agreed on
            disputed = set(by_mode)
            agreed = {lab.mode_id: lab for lab in label_store.current_labels(self.db, self.trajectory_id, self.left)}
            new += [
                self._label(m, "agreed", "", verdict=agreed[m].verdict, onset_step=agreed[m].onset_step)
                for m in self.taxonomy.mode_ids
                if m not in disputed and m in agreed and agreed[m].verdict in ("present", "absent")
            ]
        with write(self.db):
            self._undo.append(label_store.add_labels(self.db, new))
        return label

    def undo(self) -> None:
        """Retract the last decision of this session, with the agreed modes it wrote."""
        if not self._undo:
            raise AnnotatorError("nothing to undo")
        with write(self.db):
            for label_id in reversed(self._undo.pop()):
                label_store.retract(self.db, label_id, self.adjudicator)

    def _label(self, mode_id: str, choice: str, reason: str, **values) -> Label:
        return Label(
            trajectory_id=self.trajectory_id,
            mode_id=mode_id,
            annotator=ADJUDICATED,
            provenance="human",
            taxonomy_hash=self.taxonomy.version_hash,
            extra={"decided_by": self.adjudicator, "between": [self.left, self.right], "chose": choice,
                   "reason": reason.strip() or None},
            **values,
        )
