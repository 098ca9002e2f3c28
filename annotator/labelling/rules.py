"""Deterministic detectors for the failure modes that leave structural traces.

They need no model and cost nothing, so they can run over every trajectory before (or instead
of) a judge. Each hit cites the steps it rests on. They are heuristics with measured precision
and recall (``benchmarks/bench_rules.py``, README "Pre-labelling"); their verdicts are stored as
suggestions of a ``rules`` run like any judge's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

from pydantic import BaseModel

from annotator.labelling.grounding import normalise
from annotator.labelling.verdicts import ModeVerdict
from annotator.models import Step, Trajectory
from annotator.taxonomy import Taxonomy

#: Shortest message that counts when comparing messages (greetings repeat legitimately).
MIN_CHARS = 40
#: Similarity above which two messages are near-duplicates (difflib ratio).
NEAR_DUPLICATE = 0.9
#: Messages compared backwards from each message (bounds the quadratic comparison).
LOOKBACK = 40

#: A short message an agent sends this many times unchanged is a loop that should have ended.
NUDGE_LOOP = 3
NUDGE_CHARS = 300

_TERMINATION = re.compile(r"\bTERMINATE\b|\bFINAL ANSWER\b|<\s*final[_ ]answer\s*>", re.IGNORECASE)
_TURN_LIMIT = re.compile(
    r"max(imum)?[ _]?(number of )?(turns|rounds|iterations|steps)|turn limit|step limit|"
    r"(reached|exceeded|hit) the (maximum|limit)",
    re.IGNORECASE,
)


class Hit(BaseModel):
    """A detector's finding: the steps it rests on (onset first) and why."""

    steps: list[int]
    reason: str


def _similar(a: str, b: str) -> bool:
    a, b = a[:2000], b[:2000]
    if a == b:
        return True
    m = SequenceMatcher(None, a, b, autojunk=False)
    return m.real_quick_ratio() >= NEAR_DUPLICATE and m.quick_ratio() >= NEAR_DUPLICATE and m.ratio() >= NEAR_DUPLICATE


def step_repetition(steps: Sequence[Step], task: str | None) -> Hit | None:
    """FM-1.3: the same tool call with the same arguments again, or an agent repeating a message."""
    repeats: list[int] = []
    calls: dict[tuple[str, str], int] = {}
    for s in steps:
        if s.kind == "tool_call" and s.tool_name:
            key = (s.tool_name, normalise(s.tool_args or s.content))
            if key in calls:
                repeats.append(s.index)
            calls.setdefault(key, s.index)
    by_agent: dict[str, list[tuple[int, str]]] = {}
    for s in steps:
        text = normalise(s.content)
        if s.kind == "tool_call" or len(text) < MIN_CHARS or _TERMINATION.fullmatch(text.strip(". ")):
            continue
        earlier = by_agent.setdefault(s.agent or s.role or "", [])
        if any(_similar(text, t) for _, t in earlier[-LOOKBACK:]):
            repeats.append(s.index)
        earlier.append((s.index, text))
    if not repeats:
        return None
    return Hit(steps=sorted(set(repeats)), reason=f"{len(set(repeats))} step(s) repeat an earlier call or message")


def unaware_of_termination(steps: Sequence[Step], task: str | None) -> Hit | None:
    """FM-1.5: the run goes on after a termination signal, or it ran into a turn limit."""
    signals = [s.index for s in steps if s.content and _TERMINATION.search(s.content)]
    if signals:
        after = [s.index for s in steps if s.index > signals[0] and normalise(s.content)]
        if len(after) >= 2 or len(signals) >= 3:
            return Hit(
                steps=[signals[0], *after[:10]],
                reason=f"{len(after)} step(s) continue after the termination signal at step {signals[0]}",
            )
    tail = [s for s in steps[-3:] if s.content and _TURN_LIMIT.search(s.content)]
    if tail:
        return Hit(steps=[tail[0].index], reason="the run stopped at a turn or step limit")
    nudges: dict[tuple[str, str], list[int]] = {}
    for s in steps:
        text = normalise(s.content)
        if text and len(text) <= NUDGE_CHARS:
            nudges.setdefault((s.agent or s.role or "", text), []).append(s.index)
    loop = max(nudges.values(), key=len, default=[])
    if len(loop) >= NUDGE_LOOP:
        return Hit(steps=loop[1:], reason=f"the same prompt is sent {len(loop)} times instead of ending the run")
    return None


def conversation_reset(steps: Sequence[Step], task: str | None) -> Hit | None:
    """FM-2.1: the task is stated again from scratch in the middle of the run."""
    references = [normalise(task)] if task and len(task.strip()) >= MIN_CHARS else []
    first = next((s for s in steps if len(normalise(s.content)) >= MIN_CHARS), None)
    if first is not None:
        references.append(normalise(first.content))
    hits = [
        s.index
        for s in steps[2:]
        if (first is None or s.index != first.index)
        and len(normalise(s.content)) >= MIN_CHARS
        and any(_similar(normalise(s.content), ref) for ref in references)
    ]
    if not hits:
        return None
    return Hit(steps=hits, reason="the task is restated from the beginning mid-run")


def premature_termination(steps: Sequence[Step], task: str | None) -> Hit | None:
    """FM-3.1: the run ends on a tool call left unanswered, on an error, or with nothing said."""
    if not steps:
        return None
    last = steps[-1]
    if last.kind == "tool_call" and last.link is None:
        return Hit(steps=[last.index], reason="the run ends on a tool call that never got its result")
    if last.kind == "error":
        return Hit(steps=[last.index], reason="the run ends on an error")
    return None


Detector = Callable[[Sequence[Step], "str | None"], "Hit | None"]

DETECTORS: dict[str, Detector] = {
    "FM-1.3": step_repetition,
    "FM-1.5": unaware_of_termination,
    "FM-2.1": conversation_reset,
    "FM-3.1": premature_termination,
}


def _quote(step: Step) -> str:
    text = " ".join((step.content or step.tool_args or "").split())
    return text[:160]


class RulesLabeller:
    """The detectors as a Labeller: verdicts only for the modes they cover."""

    kind = "rules"

    def __init__(self, detectors: dict[str, Detector] | None = None):
        self.detectors = DETECTORS if detectors is None else detectors

    def verdicts(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        by_index = {s.index: s for s in trajectory.steps}
        out = []
        for mode_id, detect in self.detectors.items():
            if mode_id not in taxonomy.mode_ids:
                continue
            hit = detect(trajectory.steps, trajectory.task)
            if hit is None:
                out.append(ModeVerdict(mode_id=mode_id, verdict="absent", rationale=f"rule {detect.__name__}: no trace"))
                continue
            onset = hit.steps[0]
            out.append(
                ModeVerdict(
                    mode_id=mode_id,
                    verdict="present",
                    onset_step=onset,
                    evidence_steps=hit.steps[1:],
                    quote=_quote(by_index[onset]),
                    rationale=f"rule {detect.__name__}: {hit.reason}",
                    grounded=True,
                )
            )
        return out

    async def label(self, trajectory: Trajectory, taxonomy: Taxonomy) -> list[ModeVerdict]:
        return self.verdicts(trajectory, taxonomy)
