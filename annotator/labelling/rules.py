"""Deterministic detectors for the failure modes that leave structural traces.

They need no model and cost nothing, so they can run over every trajectory before (or instead
of) a judge. Each hit cites the steps it rests on. They are heuristics with measured precision
and recall (``benchmarks/bench_rules.py``, README "Pre-labelling"); their verdicts are stored as
suggestions of a ``rules`` run like any judge's.

Each detector reads the steps once, in order, keeping little state: the last messages of each
agent and the first few cited steps, which are bounded, and one hash per distinct tool call
(FM-1.3) and per distinct short message (FM-1.5), which grow with what a run does not repeat.
So a run of a million steps is scanned from the store a page at a time in linear time and in
memory that grows only by a hash per distinct call or short message. Each step's content is
read once for all of them (``near_duplicates.message``: normalised, its clauses hashed), and
near-duplicates are found as ``near_duplicates`` describes.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from pydantic import BaseModel
from sqlite_utils import Database

from annotator.labelling.grounding import normalise
from annotator.labelling.near_duplicates import EMPTY, MIN_CHARS, Message, Recent, message, near_duplicate_of, whole_text
from annotator.labelling.verdicts import ModeVerdict
from annotator.models import Step, Trajectory
from annotator.store.steps import get_step, iter_step_fields
from annotator.taxonomy import Taxonomy

#: Messages of the same agent compared backwards from each message.
LOOKBACK = 40
#: Steps a hit cites at most (the reason still counts them all).
MAX_CITED = 50

#: A short message an agent sends this many times unchanged is a loop that should have ended.
NUDGE_LOOP = 3
NUDGE_CHARS = 300

_TERMINATION = re.compile(r"\bterminate\b|\bfinal answer\b|<\s*final[_ ]answer\s*>", re.IGNORECASE)
#: Letters each match holds at a fixed distance from its start, with the letters it starts with:
#: "nate" 5 into "terminate" after "ter", "nal an" or "nal_an" 2 into "final answer" after "f".
#: None of them is i or s: IGNORECASE matches these letters with ASCII ones only (i also with ı
#: and İ, s with ſ), so an ASCII-lowered copy of the text finds every match's start.
_ANCHORS = ((b"nate", 5, b"ter"), (b"nal an", 2, b"f"), (b"nal_an", 2, b"f"))
#: A termination word that is talked about rather than said: quoted, or what someone is told to
#: reply with (AG2's Computer_terminal: 'let other participant reply me only with "TERMINATE"').
_QUOTES = "\"'“”‘’`"
_TOLD = re.compile(r"\b(?:reply|respond|answer|say|type|write|output|send)\b[^.\n]{0,40}$", re.IGNORECASE)
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


def is_termination(text: str, folded: str | None = None) -> bool:
    """Whether a message declares the task finished (a termination word said, not mentioned).

    A text that is not ASCII counts only where its case folding (``folded``, the normalised text
    where the caller has it) spells one of the words: casefold keeps a dotless ı, which
    IGNORECASE matches with i. It is folded only once a match is found, which is rare.
    """
    if not text:
        return False
    for m in _termination_matches(text):
        before, after = text[max(0, m.start() - 50) : m.start()], text[m.end() : m.end() + 3]
        quoted = before.rstrip()[-1:] in _QUOTES and after.lstrip()[:1] in _QUOTES and before.strip()
        if not quoted and not _TOLD.search(before):
            if text.isascii():
                return True
            folded = text.casefold() if folded is None else folded
            return "terminate" in folded or "final" in folded
    return False


def _termination_matches(text: str) -> Iterator[re.Match]:
    """The matches ``_TERMINATION.finditer(text)`` gives, found without the scan.

    A pattern that opens on ``\\b`` is tried at every character, and IGNORECASE over a text that
    is not ASCII costs more again: this was the costliest test of a step. Every match's start is
    found from its ``_ANCHORS`` in the text encoded to ASCII (one byte a character, so positions
    are kept; other characters become ``?``) and lowercased, or, for ``<final_answer>``, at the
    ``<`` before it and whitespace; the pattern is only tried there, in order, each start after
    the end of the match before (as finditer does).
    """
    letters = text.encode("ascii", "replace").lower()
    starts = set()
    for anchor, offset, head in _ANCHORS:
        at = letters.find(anchor, offset)
        while at >= 0:
            start = bracket = at - offset
            if letters.startswith(head, start):
                starts.add(start)
                while bracket and text[bracket - 1].isspace():
                    bracket -= 1
                if bracket and text[bracket - 1] == "<":
                    starts.add(bracket - 1)
            at = letters.find(anchor, at + 1)
    end = 0
    for at in sorted(starts):
        if at >= end and (m := _TERMINATION.match(text, at)):
            end = m.end()
            yield m


def _bare_termination(m: Message, content: str) -> bool:
    """Whether a message is a termination word alone (dots and spaces aside): a head longer than
    that once stripped rules it out without reading the rest of a long message."""
    core = m.text.strip(". ")
    if not m.whole:
        if len(core) >= MIN_CHARS:
            return False
        core = whole_text(m, content).strip(". ")
    return _TERMINATION.fullmatch(core) is not None


def _speaker(s: RuleStep) -> str:
    return s.agent or s.role or ""


class _Detector:
    """A detector reads each step once (``feed``) and then says what it found (``result``)."""

    name: str

    def __init__(self, task: str | None):
        self.task = task

    def feed(self, s: RuleStep, m: Message) -> None:
        """``m``: the step's content as ``near_duplicates.message`` read it, once for every detector."""
        raise NotImplementedError

    def result(self) -> Hit | None:
        raise NotImplementedError


class StepRepetition(_Detector):
    """FM-1.3: the same tool call with the same arguments again, or an agent repeating a message."""

    name = "step_repetition"

    def __init__(self, task: str | None):
        super().__init__(task)
        self.calls: set[int] = set()
        self.recent: dict[str, Recent] = {}
        self.repeats: list[int] = []
        self.n = 0

    def _repeat(self, index: int) -> None:
        self.n += 1
        if len(self.repeats) < MAX_CITED:
            self.repeats.append(index)

    def feed(self, s: RuleStep, m: Message) -> None:
        if s.kind == "tool_call":
            if s.tool_name:
                key = hash((s.tool_name, normalise(s.tool_args or s.content)))
                if key in self.calls:
                    self._repeat(s.index)
                    return
                self.calls.add(key)
            return
        if len(m.text) < MIN_CHARS or _bare_termination(m, s.content):
            return
        recent = self.recent.get(_speaker(s))
        if recent is None:
            recent = self.recent[_speaker(s)] = Recent(LOOKBACK)
        elif recent.repeated_by(m):
            self._repeat(s.index)
        recent.add(m)

    def result(self) -> Hit | None:
        if not self.n:
            return None
        return Hit(steps=self.repeats, reason=f"{self.n} step(s) repeat an earlier call or message")


class UnawareOfTermination(_Detector):
    """FM-1.5: the run goes on after a termination signal, or it ran into a turn limit."""

    name = "unaware_of_termination"

    def __init__(self, task: str | None):
        super().__init__(task)
        self.first_signal: int | None = None
        self.signals = 0
        self.after: list[int] = []
        self.n_after = 0
        self.tail: deque[RuleStep] = deque(maxlen=3)
        self.nudges: dict[int, list[int]] = {}  # hash of (speaker, text) -> its first indices
        self.nudge_counts: dict[int, int] = {}

    def feed(self, s: RuleStep, m: Message) -> None:
        self.tail.append(s)
        text = m.text
        if self.first_signal is not None and text:
            self.n_after += 1
            if len(self.after) < 10:
                self.after.append(s.index)
        if is_termination(s.content, text if m.whole else None):
            self.signals += 1
            if self.first_signal is None:
                self.first_signal = s.index
        if text and m.whole and len(text) <= NUDGE_CHARS:
            key = hash((_speaker(s), text))
            count = self.nudge_counts[key] = self.nudge_counts.get(key, 0) + 1
            if count <= MAX_CITED + 1:
                self.nudges.setdefault(key, []).append(s.index)

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
    """FM-2.1: the task is stated again from scratch in the middle of the run."""

    name = "conversation_reset"

    def __init__(self, task: str | None):
        super().__init__(task)
        self.references = [message(task)] if task and len(task.strip()) >= MIN_CHARS else []
        self.first: int | None = None
        self.position = 0
        self.hits: list[int] = []
        self.n = 0

    def feed(self, s: RuleStep, m: Message) -> None:
        position, self.position = self.position, self.position + 1
        if len(m.text) < MIN_CHARS:
            return
        if self.first is None:
            self.first = s.index
            self.references.append(m)
            return
        if position >= 2 and near_duplicate_of(m, self.references):
            self.n += 1
            if len(self.hits) < MAX_CITED:
                self.hits.append(s.index)

    def result(self) -> Hit | None:
        if not self.n:
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


def _rule_steps(steps: Iterable[Step]) -> Iterable[RuleStep]:
    for s in steps:
        yield RuleStep(s.index, s.agent, s.role, s.kind, s.content, s.tool_name, s.tool_args, s.link)


def scan(steps: Iterable[RuleStep], task: str | None, detectors: dict[str, type[_Detector]]) -> dict[str, tuple[_Detector, Hit | None]]:
    """Every detector over the steps in one pass: each mode's detector and what it found."""
    running = {mode: cls(task) for mode, cls in detectors.items()}
    feeds = [d.feed for d in running.values()]
    for s in steps:
        m = message(s.content) if s.content else EMPTY
        for feed in feeds:
            feed(s, m)
    return {mode: (d, d.result()) for mode, d in running.items()}


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

    def _steps(self, trajectory: Trajectory) -> Iterable[RuleStep]:
        if self.db is None:
            return _rule_steps(trajectory.steps)
        return (RuleStep(*row) for row in iter_step_fields(self.db, trajectory.id, FIELDS))

    def verdicts(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        return self.verdicts_for(trajectory, taxonomy.mode_ids)

    def verdicts_for(self, trajectory: Trajectory, mode_ids: Sequence[str]) -> list[ModeVerdict]:
        """Verdicts for the detected modes among ``mode_ids`` (a taxonomy's, as a worker process gets them)."""
        wanted = {m: d for m, d in self.detectors.items() if m in mode_ids}
        found = scan(self._steps(trajectory), trajectory.task, wanted)
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
