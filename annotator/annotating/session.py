"""Annotating one trajectory: the rules of tagging, undo, "done" and suggestions, without any UI.

The TUI only maps keys to these calls and draws the result, so the semantics live here and are
unit-tested without Textual:

- toggling a mode on a step tags it with that step as onset; toggling it again on another step
  moves the onset there; toggling it on its onset step clears it;
- every action is committed at once through the store (append-only rows) and pushed on an undo
  stack; undo writes retractions, so history keeps everything;
- "done" turns every mode the annotator left untagged into an explicit "absent";
- machine suggestions (labels of ``run:<id>`` annotators) are accepted or rejected per label;
  a decision can be changed and undone like a tag.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import monotonic
from typing import Literal

from sqlite_utils import Database

from annotator.errors import AnnotatorError, NotFound
from annotator.label_sources import is_run
from annotator.models import Attribution, Decision, Label, LabelRun, ReviewStatus, Step, utcnow
from annotator.store import labels as label_store
from annotator.store import review, runs
from annotator.store.attributions import attributions
from annotator.store.db import write
from annotator.store.search import search_steps
from annotator.store.step_heads import get_step_head
from annotator.store.steps import get_step, step_previews
from annotator.store.trajectories import get_summary
from annotator.taxonomy import Taxonomy
from annotator.views import SearchHit, StepPreview, TrajectorySummary


class NothingToUndo(AnnotatorError):
    """Undo was asked for with no action left on the stack."""


class ModeNotTagged(AnnotatorError):
    """An edit (note, quote, evidence) addressed a mode that carries no tag."""


class AlreadyDecided(AnnotatorError):
    """A suggestion was accepted (or rejected) again: nothing to change."""


@dataclass(frozen=True)
class Suggestion:
    """A run's "present" label offered to the annotator, with their decision on it so far."""

    label: Label
    run: LabelRun | None
    decision: Decision | None

    @property
    def cited_steps(self) -> list[int]:
        """Onset first, then evidence steps, without repeats."""
        steps = [self.label.onset_step] if self.label.onset_step is not None else []
        return steps + [s for s in self.label.evidence_steps if s not in steps]


@dataclass(frozen=True)
class LabelsView:
    """What the labels panel shows, per mode id: own labels, runs' suggestions, other people's labels."""

    labels: dict[str, Label]
    suggestions: dict[str, list[Suggestion]]
    others: dict[str, list[Label]]


@dataclass
class _Undo:
    """One undoable action: the label rows it wrote, the review status it replaced, and for a
    decision on a suggestion, that suggestion with the decision standing before."""

    description: str
    label_ids: list[int]
    previous_status: ReviewStatus | None = None
    decision: tuple[Label, Decision | None] | None = None


ActionKind = Literal["tagged", "moved", "untagged"]


@dataclass(frozen=True)
class ToggleResult:
    """What a toggle did, for the front end to say so."""

    kind: ActionKind
    mode_id: str
    step: int


@dataclass
class AnnotationSession:
    """One annotator working on one trajectory; every method commits before it returns."""

    db: Database
    trajectory_id: str
    annotator: str
    taxonomy: Taxonomy
    blind: bool = False
    """Suggestions, other people's labels and outcomes are hidden: recorded with the review."""
    _undo: list[_Undo] = field(default_factory=list)
    _started: float = field(default_factory=monotonic)

    # ---- reading

    def summary(self) -> TrajectorySummary:
        return get_summary(self.db, self.trajectory_id)

    def step_previews(self, start: int, limit: int) -> list[StepPreview]:
        """One-line previews of steps ``start`` .. ``start + limit`` (never their full contents)."""
        return step_previews(self.db, self.trajectory_id, start, limit)

    def step(self, index: int) -> Step:
        """Step ``index`` whole."""
        return get_step(self.db, self.trajectory_id, index)

    def step_head(self, index: int) -> tuple[Step, int]:
        """Step ``index`` with a long content cut to its head, and the content's full length."""
        return get_step_head(self.db, self.trajectory_id, index)

    def search(self, text: str, limit: int = 1000) -> list[SearchHit]:
        """Steps of this trajectory whose content holds every word of ``text``, best first."""
        return search_steps(self.db, text, self.trajectory_id, limit)

    def labels(self) -> dict[str, Label]:
        """The annotator's current label (present or absent) per mode id."""
        return {
            lab.mode_id: lab
            for lab in label_store.current_labels(self.db, self.trajectory_id, self.annotator)
        }

    def view(self, *, blind: bool = False) -> LabelsView:
        """Own labels, runs' suggestions and other people's labels from one read of the current
        labels (what a redraw needs); ``blind`` leaves suggestions and others empty."""
        current = label_store.current_labels(self.db, self.trajectory_id)
        own = {lab.mode_id: lab for lab in current if lab.annotator == self.annotator}
        if blind:
            return LabelsView(own, {}, {})
        return LabelsView(own, self._suggestions(current), self._others(current))

    def status(self) -> ReviewStatus:
        return review.get_review(self.db, self.trajectory_id, self.annotator).status

    def others(self) -> dict[str, list[Label]]:
        """Current labels of other people (not runs) per mode id."""
        return self._others(label_store.current_labels(self.db, self.trajectory_id))

    def _others(self, current: list[Label]) -> dict[str, list[Label]]:
        out: dict[str, list[Label]] = {}
        for lab in current:
            if lab.annotator != self.annotator and not is_run(lab.annotator):
                out.setdefault(lab.mode_id, []).append(lab)
        return out

    def attributions(self) -> list[Attribution]:
        """Decisive-error attributions of the trajectory (a dataset's or a person's), to compare with."""
        return attributions(self.db, self.trajectory_id)

    def suggestions(self) -> dict[str, list[Suggestion]]:
        """Runs' "present" labels per mode id, each with this annotator's decision."""
        return self._suggestions(label_store.current_labels(self.db, self.trajectory_id))

    def _suggestions(self, current: list[Label]) -> dict[str, list[Suggestion]]:
        decisions = label_store.suggestion_decisions(self.db, self.trajectory_id, self.annotator)
        known_runs: dict[int, LabelRun | None] = {}
        out: dict[str, list[Suggestion]] = {}
        for lab in current:
            if not is_run(lab.annotator) or lab.verdict != "present":
                continue
            run = None
            if lab.run_id is not None:
                if lab.run_id not in known_runs:
                    try:
                        known_runs[lab.run_id] = runs.get_run(self.db, lab.run_id)
                    except NotFound:
                        known_runs[lab.run_id] = None
                run = known_runs[lab.run_id]
            decision = decisions.get(lab.id)
            out.setdefault(lab.mode_id, []).append(Suggestion(lab, run, decision[0] if decision else None))
        return out

    def suggestion_for(self, mode_id: str) -> Suggestion | None:
        """The suggestion on ``mode_id`` to decide next: an undecided one first, else the first
        (a decision can be changed: the newest one counts)."""
        offered = self.suggestions().get(mode_id, [])
        return next((s for s in offered if s.decision is None), offered[0] if offered else None)

    @property
    def undo_depth(self) -> int:
        return len(self._undo)

    # ---- writing

    def toggle(self, mode_id: str, step: int) -> ToggleResult:
        """Tag ``mode_id`` with onset ``step``; move the onset if tagged elsewhere; clear if tagged here."""
        self.taxonomy.mode(mode_id)
        current = self.labels().get(mode_id)
        if current is not None and current.verdict == "present":
            if current.onset_step == step:
                kind: ActionKind = "untagged"
                new = self._label(mode_id, verdict=None, onset_step=None)
            else:
                kind = "moved"
                new = current.model_copy(update=self._fresh(onset_step=step, provenance="human", run_id=None))
        else:
            kind = "tagged"
            new = self._label(mode_id, verdict="present", onset_step=step)
        self._commit(f"{kind} {mode_id} at step {step}", [new])
        return ToggleResult(kind, mode_id, step)

    def toggle_evidence(self, mode_id: str, step: int) -> bool:
        """Add ``step`` to the mode's evidence steps, or remove it; True when it was added."""
        current = self._tagged(mode_id)
        steps = list(current.evidence_steps)
        added = step not in steps
        steps = sorted([*steps, step]) if added else [s for s in steps if s != step]
        self._commit(f"evidence of {mode_id}", [current.model_copy(update=self._fresh(evidence_steps=steps))])
        return added

    def set_note(self, mode_id: str, note: str) -> None:
        """The annotator's note on a tagged mode (blank clears it), as a new label version."""
        current = self._tagged(mode_id)
        self._commit(f"note on {mode_id}", [current.model_copy(update=self._fresh(note=note.strip() or None))])

    def set_quote(self, mode_id: str, quote: str) -> None:
        """The quote that shows a tagged mode (blank clears it), as a new label version."""
        current = self._tagged(mode_id)
        self._commit(f"quote on {mode_id}", [current.model_copy(update=self._fresh(quote=quote.strip() or None))])

    def untagged_modes(self) -> list[str]:
        """Modes with no verdict yet: what "done" will record as absent."""
        current = self.labels()
        return [m for m in self.taxonomy.mode_ids if m not in current]

    def mark_done(self) -> list[str]:
        """Record every untagged mode as absent and the trajectory as done; returns those modes."""
        absent = self.untagged_modes()
        previous = self.status()
        with write(self.db):  # the absent verdicts and "done" together, or neither
            ids = label_store.add_labels(
                self.db, [self._label(m, verdict="absent", onset_step=None) for m in absent]
            )
            review.set_review(self.db, self.trajectory_id, self.annotator, "done", add_seconds=self._elapsed(),
                              blind=self.blind)
        self._undo.append(_Undo("marked done", ids, previous))
        return absent

    def decide(self, suggestion: Suggestion, decision: Decision) -> None:
        """Accept (the suggestion becomes the annotator's own label) or reject a suggestion.

        A decision can be changed: rejecting a suggestion accepted earlier also clears the label
        that accepting wrote (edited since or not: it still derives from the suggestion). Undo
        restores the decision standing before (none: the suggestion waits again).
        """
        if suggestion.decision == decision:
            raise AlreadyDecided(f"the suggestion on {suggestion.label.mode_id} is already {decision}")
        mode_id = suggestion.label.mode_id
        own = self.labels().get(mode_id)
        self._start()
        with write(self.db):
            new_id = label_store.decide_suggestion(
                self.db, suggestion.label, self.annotator, decision, taxonomy_hash=self.taxonomy.version_hash
            )
            ids = [new_id] if new_id is not None else []
            if decision == "rejected" and own is not None and own.extra.get("suggestion_label_id") == suggestion.label.id:
                ids += label_store.add_labels(self.db, [self._label(mode_id, verdict=None, onset_step=None)])
        self._undo.append(_Undo(f"{decision} {mode_id}", ids, decision=(suggestion.label, suggestion.decision)))

    def undo(self) -> str:
        """Withdraw the last action's rows (and restore the review status or decision it changed)."""
        if not self._undo:
            raise NothingToUndo("nothing to undo")
        action = self._undo[-1]
        with write(self.db):
            for label_id in reversed(action.label_ids):
                label_store.retract(self.db, label_id, self.annotator)
            if action.previous_status is not None:
                review.set_review(self.db, self.trajectory_id, self.annotator, action.previous_status,
                                  blind=self.blind)
            if action.decision is not None:
                label_store.record_decision(self.db, action.decision[0], self.annotator, action.decision[1])
        self._undo.pop()  # only once undone: a refused undo can be made again
        return action.description

    def close(self) -> None:
        """Add the time spent since the last save to the review state (when work was started)."""
        state = review.get_review(self.db, self.trajectory_id, self.annotator)
        if state.status != "not_started":
            review.set_review(self.db, self.trajectory_id, self.annotator, state.status, add_seconds=self._elapsed(),
                              blind=self.blind)

    # ---- helpers

    def _tagged(self, mode_id: str) -> Label:
        current = self.labels().get(mode_id)
        if current is None or current.verdict != "present":
            raise ModeNotTagged(f"{mode_id} is not tagged: tag it first")
        return current

    def _label(self, mode_id: str, **values) -> Label:
        return Label(
            trajectory_id=self.trajectory_id,
            mode_id=mode_id,
            annotator=self.annotator,
            provenance="human",
            taxonomy_hash=self.taxonomy.version_hash,
            **values,
        )

    def _fresh(self, **changes) -> dict:
        """Field updates for a new row derived from the current one (new id, time, codebook)."""
        return {"id": None, "created_at": utcnow(), "taxonomy_hash": self.taxonomy.version_hash, **changes}

    def _commit(self, description: str, new: list[Label]) -> None:
        with write(self.db):  # one transaction: refused, it leaves nothing behind to retry over
            self._start()
            ids = label_store.add_labels(self.db, new)
        self._undo.append(_Undo(description, ids))

    def _start(self) -> None:
        if self.status() == "not_started":
            review.set_review(self.db, self.trajectory_id, self.annotator, "in_progress", blind=self.blind)

    def _elapsed(self) -> float:
        now = monotonic()
        spent, self._started = now - self._started, now
        return spent
