"""Deterministic detectors for the failure modes that leave structural traces.

They need no model and cost nothing, so they can run over every trajectory before (or instead
of) a judge. Each hit cites the steps it rests on. They are heuristics with measured precision
and recall (``benchmarks/bench_rules.py``, README "Pre-labelling"); their verdicts are stored as
suggestions of a ``rules`` run like any judge's.

Each detector reads the steps once, in order, keeping little state: the last messages of each
agent and the first few cited steps, which are bounded, and one digest per distinct tool call
(FM-1.3) and per distinct short message (FM-1.5), which grow with what a run does not repeat.
So a run of a million steps is scanned from the store a page at a time in linear time and in
memory that grows only by a digest per distinct call or short message. Each step's content is
read once for all of them (``near_duplicates.message``: normalised, its clauses hashed), and
near-duplicates are found as ``near_duplicates`` describes. A long run can be scanned in parts
apart (by several processes) and the parts' detectors joined, in order, into what one scan
finds (``scan_part``, ``results``).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from hashlib import blake2b
from typing import TYPE_CHECKING, NamedTuple, Self

from pydantic import BaseModel
from annotator.labelling.grounding import normalise
from annotator.labelling.near_duplicates import EMPTY, MIN_CHARS, Message, Recent, message, near_duplicate_of
from annotator.labelling.termination import bare_termination, is_termination
from annotator.labelling.verdicts import ModeVerdict
from annotator.models import Step, Trajectory
from annotator.store.steps import get_step, iter_step_fields
from annotator.taxonomy import Taxonomy

if TYPE_CHECKING:  # for annotations only
    from sqlite_utils import Database

#: Messages of the same agent compared backwards from each message.
LOOKBACK = 40
#: Steps a hit cites at most (the reason still counts them all).
MAX_CITED = 50

#: A short message an agent sends this many times unchanged is a loop that should have ended.
NUDGE_LOOP = 3
NUDGE_CHARS = 300

_TURN_LIMIT = re.compile(
    r"max(imum)?[ _]?(number of )?(turns|rounds|iterations|steps)|turn limit|step limit|"
    r"(reached|exceeded|hit) the (maximum|limit)",
    re.IGNORECASE,
)


class RuleStep(NamedTuple):
    """The fields of a step the detectors read (a step from the store, or a Step model's)."""

    index: int
    agent: str | None
    role: str | None
    kind: str
    content: str
    tool_name: str | None
    tool_args: str | None
    link: int | None


FIELDS = RuleStep._fields


class Hit(BaseModel):
    """A detector's finding: the steps it rests on (onset first) and why."""

    steps: list[int]
    reason: str


def _speaker(s: RuleStep) -> str:
    return s.agent or s.role or ""


def _key(a: str, b: str) -> bytes:
    """A digest of the pair ``(a, b)`` that every process computes alike: the parts of a long run
    are scanned in worker processes and joined in the runner's, and ``hash`` is salted a process."""
    return blake2b(f"{len(a)}:{a}{b}".encode("utf-8", "surrogatepass"), digest_size=8).digest()


class _Detector:
    """A detector reads each step once (``feed``) and then says what it found (``result``).

    A long run may be scanned in parts, each by a detector of its own (``scan_part``): one whose
    part is not the first is told so before its first step (``follows``), and each detector is
    then given the next part's (``join``), after which its ``result`` is what one scan of both
    parts in order would have found.
    """

    name: str

    def __init__(self, task: str | None):
        self.task = task
        self.later = False

    def feed(self, s: RuleStep, m: Message) -> None:
        """``m``: the step's content as ``near_duplicates.message`` read it, once for every detector."""
        raise NotImplementedError

    def follows(self, before: Callable[[], Iterable[RuleStep]]) -> None:
        """This detector's part comes after the run's first steps; ``before()`` reads those, from
        the run's first step, for a detector that needs them (as far as it needs)."""
        self.later = True

    def join(self, later: Self) -> None:
        """Take in ``later``: the detector of the part right after this one's."""
        raise NotImplementedError

    def result(self) -> Hit | None:
        raise NotImplementedError


class StepRepetition(_Detector):
    """FM-1.3: the same tool call with the same arguments again, or an agent repeating a message.

    A later part keeps the first step of each call it makes, and the first ``LOOKBACK`` messages
    of each speaker that repeat nothing within the part (with how many messages of the speaker
    came before them in it): the part before may hold what they repeat.
    """

    name = "step_repetition"

    def __init__(self, task: str | None):
        super().__init__(task)
        self.calls: set[bytes] = set()
        self.recent: dict[str, Recent] = {}
        self.repeats: list[int] = []
        self.n = 0
        self.first_calls: dict[bytes, int] = {}
        self.heads: dict[str, list[tuple[int, int, Message]]] = {}

    def _repeat(self, index: int) -> None:
        self.n += 1
        if len(self.repeats) < MAX_CITED:
            self.repeats.append(index)

    def feed(self, s: RuleStep, m: Message) -> None:
        if s.kind == "tool_call":
            if s.tool_name:
                key = _key(s.tool_name, normalise(s.tool_args or s.content))
                if key in self.calls:
                    self._repeat(s.index)
                    return
                self.calls.add(key)
                if self.later:
                    self.first_calls[key] = s.index
            return
        if len(m.text) < MIN_CHARS or bare_termination(m, s.content):
            return
        speaker = _speaker(s)
        recent = self.recent.get(speaker)
        if recent is None:
            recent = self.recent[speaker] = Recent(LOOKBACK)
        if recent.repeated_by(m):
            self._repeat(s.index)
        elif self.later and len(recent.messages) < LOOKBACK:
            self.heads.setdefault(speaker, []).append((len(recent.messages), s.index, m))
        recent.add(m)

    def join(self, later: StepRepetition) -> None:
        found = [index for key, index in later.first_calls.items() if key in self.calls]
        self.calls |= later.calls
        for speaker, heads in later.heads.items():
            tail = self.recent.get(speaker)
            if tail is None:
                continue
            for said, index, m in heads:  # the speaker's messages still in its window at m
                if Recent(LOOKBACK - said, tail.messages).repeated_by(m):
                    found.append(index)
        self.n += later.n + len(found)
        self.repeats = sorted([*self.repeats, *later.repeats, *found])[:MAX_CITED]
        for speaker, recent in later.recent.items():
            earlier = self.recent.get(speaker)
            if earlier is not None and len(recent.messages) < LOOKBACK:  # its window reaches into this part
                recent = Recent(LOOKBACK, (*earlier.messages, *recent.messages))
            self.recent[speaker] = recent

    def result(self) -> Hit | None:
        if not self.n:
            return None
        return Hit(steps=self.repeats, reason=f"{self.n} step(s) repeat an earlier call or message")


class UnawareOfTermination(_Detector):
    """FM-1.5: the run goes on after a termination signal, or it ran into a turn limit.

    A later part counts its steps that say something (and keeps the first few): all of them
    continue after a signal the part before gave.

    Once a part holds a signal with two steps after it, or three signals, its finding is that
    signal's whatever follows, and so is the finding of the parts it is joined with (their first
    signal has at least as many steps after it, and signals only add up): it then stops testing
    steps for signals and counting prompts (``settled``), most of its work a step, and only
    counts the steps that go on.
    """

    name = "unaware_of_termination"

    def __init__(self, task: str | None):
        super().__init__(task)
        self.first_signal: int | None = None
        self.signals = 0
        self.after: list[int] = []
        self.n_after = 0
        self.tail: deque[RuleStep] = deque(maxlen=3)
        self.nudges: dict[bytes, list[int]] = {}  # key of (speaker, text) -> its first indices
        self.nudge_counts: dict[bytes, int] = {}
        self.said: list[int] = []
        self.n_said = 0
        self.settled = False

    def feed(self, s: RuleStep, m: Message) -> None:
        self.tail.append(s)
        text = m.text
        if text:
            if self.first_signal is not None:
                self.n_after += 1
                if len(self.after) < 10:
                    self.after.append(s.index)
            if self.later:
                self.n_said += 1
                if len(self.said) < 10:
                    self.said.append(s.index)
        if self.settled:
            return
        if is_termination(s.content, text if m.whole else None):
            self.signals += 1
            if self.first_signal is None:
                self.first_signal = s.index
        if self.first_signal is not None and (self.n_after >= 2 or self.signals >= 3):
            self.settled = True
            return
        if text and m.whole and len(text) <= NUDGE_CHARS:
            key = _key(_speaker(s), text)
            count = self.nudge_counts[key] = self.nudge_counts.get(key, 0) + 1
            if count <= MAX_CITED + 1:
                self.nudges.setdefault(key, []).append(s.index)

    def join(self, later: UnawareOfTermination) -> None:
        if self.first_signal is None:
            self.first_signal, self.after, self.n_after = later.first_signal, later.after, later.n_after
        else:
            self.n_after += later.n_said
            self.after = [*self.after, *later.said][:10]
        self.signals += later.signals
        self.tail.extend(later.tail)
        for key, count in later.nudge_counts.items():
            self.nudge_counts[key] = self.nudge_counts.get(key, 0) + count
            self.nudges[key] = [*self.nudges.get(key, ()), *later.nudges[key]][: MAX_CITED + 1]

    def result(self) -> Hit | None:
        if self.first_signal is not None and (self.n_after >= 2 or self.signals >= 3):
            return Hit(
                steps=[self.first_signal, *self.after],
                reason=f"{self.n_after} step(s) continue after the termination signal at step {self.first_signal}",
            )
        limit = next((s for s in self.tail if s.content and _TURN_LIMIT.search(s.content)), None)
        if limit is not None:
            return Hit(steps=[limit.index], reason="the run stopped at a turn or step limit")
        if self.nudge_counts:
            key = max(self.nudge_counts, key=lambda k: (self.nudge_counts[k], -self.nudges[k][0]))
            n = self.nudge_counts[key]
            if n >= NUDGE_LOOP:
                return Hit(steps=self.nudges[key][1:], reason=f"the same prompt is sent {n} times instead of ending the run")
        return None


class ConversationReset(_Detector):
    """FM-2.1: the task is stated again from scratch in the middle of the run.

    A later part reads the run's first steps up to its first message of ``MIN_CHARS`` (the
    reference restated), usually a step or two. The finding is the first ``MAX_CITED``
    restatements, so a part that has found them reads no further.
    """

    name = "conversation_reset"

    def __init__(self, task: str | None):
        super().__init__(task)
        self.references = [message(task)] if task and len(task.strip()) >= MIN_CHARS else []
        self.first: int | None = None
        self.position = 0
        self.hits: list[int] = []

    def _first(self, s: RuleStep, m: Message) -> bool:
        if self.first is None and len(m.text) >= MIN_CHARS:
            self.first = s.index
            self.references.append(m)
            return True
        return False

    def feed(self, s: RuleStep, m: Message) -> None:
        if len(self.hits) == MAX_CITED:
            return
        position, self.position = self.position, self.position + 1
        if len(m.text) < MIN_CHARS or self._first(s, m):
            return
        if position >= 2 and near_duplicate_of(m, self.references):
            self.hits.append(s.index)

    def follows(self, before: Callable[[], Iterable[RuleStep]]) -> None:
        super().follows(before)
        # the position counts only as far as 2: a restatement in the first two steps is the task
        for s in before():
            self.position += 1
            self._first(s, message(s.content))
            if self.first is not None and self.position >= 2:
                break

    def join(self, later: ConversationReset) -> None:
        self.hits = [*self.hits, *later.hits][:MAX_CITED]

    def result(self) -> Hit | None:
        if not self.hits:
            return None
        return Hit(steps=self.hits, reason="the task is restated from the beginning mid-run")


class PrematureTermination(_Detector):
    """FM-3.1: the run ends on a tool call left unanswered, on an error, or with nothing said."""

    name = "premature_termination"

    def __init__(self, task: str | None):
        super().__init__(task)
        self.last: RuleStep | None = None

    def feed(self, s: RuleStep, m: Message) -> None:
        self.last = s

    def join(self, later: PrematureTermination) -> None:
        if later.last is not None:
            self.last = later.last

    def result(self) -> Hit | None:
        last = self.last
        if last is None:
            return None
        if last.kind == "tool_call" and last.link is None:
            return Hit(steps=[last.index], reason="the run ends on a tool call that never got its result")
        if last.kind == "error":
            return Hit(steps=[last.index], reason="the run ends on an error")
        return None


DETECTORS: dict[str, type[_Detector]] = {
    "FM-1.3": StepRepetition,
    "FM-1.5": UnawareOfTermination,
    "FM-2.1": ConversationReset,
    "FM-3.1": PrematureTermination,
}

#: Each mode's detector after a scan (of a run, or of a part of one).
Scanned = dict[str, _Detector]


def _rule_steps(steps: Iterable[Step]) -> Iterable[RuleStep]:
    for s in steps:
        yield RuleStep(s.index, s.agent, s.role, s.kind, s.content, s.tool_name, s.tool_args, s.link)


def scan_part(steps: Iterable[RuleStep], task: str | None, detectors: dict[str, type[_Detector]],
              before: Callable[[], Iterable[RuleStep]] | None = None) -> Scanned:
    """Every detector over the steps in one pass. ``before``: for a part of a run that is not its
    first, what reads the steps ahead of it (see ``_Detector.follows``)."""
    running = {mode: cls(task) for mode, cls in detectors.items()}
    if before is not None:
        for d in running.values():
            d.follows(before)
    feeds = [d.feed for d in running.values()]
    for s in steps:
        m = message(s.content) if s.content else EMPTY
        for feed in feeds:
            feed(s, m)
    return running


def results(parts: Sequence[Scanned]) -> dict[str, tuple[_Detector, Hit | None]]:
    """What one scan of the parts' steps in order finds: each mode's detector and its hit."""
    first, *rest = parts
    for part in rest:
        for mode, d in first.items():
            d.join(part[mode])
    return {mode: (d, d.result()) for mode, d in first.items()}


def scan(steps: Iterable[RuleStep], task: str | None, detectors: dict[str, type[_Detector]]) -> dict[str, tuple[_Detector, Hit | None]]:
    """Every detector over the steps in one pass: each mode's detector and what it found."""
    return results([scan_part(steps, task, detectors)])


def _run(cls: type[_Detector]) -> Callable[[Sequence[Step], str | None], Hit | None]:
    def detect(steps: Sequence[Step], task: str | None) -> Hit | None:
        return scan(_rule_steps(steps), task, {"": cls})[""][1]

    detect.__name__ = cls.name
    detect.__doc__ = cls.__doc__
    return detect


step_repetition = _run(StepRepetition)
unaware_of_termination = _run(UnawareOfTermination)
conversation_reset = _run(ConversationReset)
premature_termination = _run(PrematureTermination)


def _quote(content: str | None, tool_args: str | None) -> str:
    text = " ".join((content or tool_args or "").split())
    return text[:160]


#: Steps a page when a part reads the steps ahead of it (a detector needs the first few).
_BEFORE_PAGE = 64


class RulesLabeller:
    """The detectors as a Labeller: verdicts only for the modes they cover.

    Given a database, it reads a trajectory's steps from the store itself, a page at a time, so
    the runner hands it trajectories without their steps (``needs_steps``).
    """

    kind = "rules"

    def __init__(self, detectors: dict[str, type[_Detector]] | None = None, db: Database | None = None):
        self.detectors = DETECTORS if detectors is None else detectors
        self.db = db
        self.needs_steps = db is None

    def _steps(self, trajectory: Trajectory, start: int = 0, stop: int | None = None, page: int = 5000) -> Iterable[RuleStep]:
        """The steps ``start <= index < stop`` (to the last when ``stop`` is None)."""
        if self.db is None:
            return _rule_steps(s for s in trajectory.steps if s.index >= start and (stop is None or s.index < stop))
        return map(RuleStep._make, iter_step_fields(self.db, trajectory.id, FIELDS, page, start, stop))

    def verdicts(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        return self.verdicts_for(trajectory, taxonomy.mode_ids)

    def verdicts_for(self, trajectory: Trajectory, mode_ids: Sequence[str]) -> list[ModeVerdict]:
        """Verdicts for the detected modes among ``mode_ids`` (a taxonomy's, as a worker process gets them)."""
        return self.verdicts_from(trajectory, [self.part(trajectory, mode_ids)])

    def part(self, trajectory: Trajectory, mode_ids: Sequence[str], start: int | None = None,
             stop: int | None = None) -> Scanned:
        """The detected modes among ``mode_ids`` over the steps ``start <= index < stop`` (None:
        from the first, to the last), for ``verdicts_from`` to join with the other parts."""
        wanted = {m: d for m, d in self.detectors.items() if m in mode_ids}
        before = None if start is None else (lambda: self._steps(trajectory, stop=start, page=_BEFORE_PAGE))
        return scan_part(self._steps(trajectory, start or 0, stop), trajectory.task, wanted, before)

    def verdicts_from(self, trajectory: Trajectory, parts: Sequence[Scanned]) -> list[ModeVerdict]:
        """The verdicts of one scan of the parts of ``trajectory`` (``part``, in order of their steps)."""
        found = results(parts)
        quotes = self._onset_quotes(trajectory, [hit.steps[0] for _, hit in found.values() if hit is not None])
        out = []
        for mode_id, (detector, hit) in found.items():
            if hit is None:
                out.append(ModeVerdict(mode_id=mode_id, verdict="absent", rationale=f"rule {detector.name}: no trace"))
                continue
            onset = hit.steps[0]
            out.append(
                ModeVerdict(
                    mode_id=mode_id,
                    verdict="present",
                    onset_step=onset,
                    evidence_steps=hit.steps[1:],
                    quote=quotes[onset],
                    rationale=f"rule {detector.name}: {hit.reason}",
                    grounded=True,
                )
            )
        return out

    def _onset_quotes(self, trajectory: Trajectory, onsets: list[int]) -> dict[int, str]:
        """The quote of each onset step, read by index (a second pass over a long run would cost)."""
        if self.db is None:
            by_index = {s.index: s for s in trajectory.steps}
            return {i: _quote(by_index[i].content, by_index[i].tool_args) for i in onsets}
        steps = {i: get_step(self.db, trajectory.id, i) for i in set(onsets)}
        return {i: _quote(s.content, s.tool_args) for i, s in steps.items()}

    async def label(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        return self.verdicts(trajectory, taxonomy)
