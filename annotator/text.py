"""Hostile text made inert, and the plain-text forms of trajectories built on it (terminals, prompts).

Trajectory content is written by models and tools. Before it reaches a terminal, every
control character except newline and tab is replaced by a visible escape (``\\x1b``), so an
ANSI sequence in a step is shown, never executed. Rich/Textual markup is never parsed here:
this module returns plain strings.
"""

from __future__ import annotations

import re

from annotator.models import Step
from annotator.views import TrajectorySummary

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

KIND_ICONS = {
    "message": "💬",
    "thought": "💭",
    "plan": "🗺",
    "tool_call": "🔧",
    "tool_result": "📤",
    "observation": "👁",
    "handoff": "🤝",
    "system": "⚙",
    "error": "❌",
    "final_answer": "🏁",
    "evaluation": "⚖",
    "log": "📜",
    "event": "•",
}


def inert(text: str) -> str:
    """``text`` with terminal control characters shown as escapes instead of acted upon."""
    text = text.replace("\r\n", "\n")
    return _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)


def one_line(text: str, width: int = 120) -> str:
    """A single-line preview: whitespace folded, control characters made inert, cut to width."""
    flat = " ".join(inert(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def step_title(step: Step) -> str:
    """'#12 WebSurfer · tool_call search' — the heading of a step wherever it is printed."""
    who = step.agent or step.role or "?"
    if step.recipient:
        who += f" → {step.recipient}"
    title = f"#{step.index} {who} · {step.kind}"
    if step.tool_name:
        title += f" {step.tool_name}"
    return inert(title)


def plain_step(step: Step) -> str:
    """A step as plain text: title line, then the content (tool arguments shown for calls)."""
    lines = [f"── {step_title(step)} " + "─" * 8]
    if step.kind == "tool_call" and step.tool_args:
        lines.append(f"arguments: {inert(step.tool_args)}")
    elif step.content:
        lines.append(inert(step.content))
    if step.link is not None:
        lines.append(f"(linked to step #{step.link})")
    return "\n".join(lines) + "\n\n"


def plain_header(t: TrajectorySummary, *, show_outcome: bool = True) -> str:
    """The few lines that introduce a trajectory."""
    facts = [
        ("id", t.id),
        ("title", t.title),
        ("system", t.system),
        ("model", t.model),
        ("benchmark", t.benchmark),
        ("format", t.source_format),
        ("steps", str(t.n_steps)),
        ("agents", ", ".join(t.agents)),
    ]
    if show_outcome:
        facts.append(("outcome", t.outcome + (f" (score {t.score:g})" if t.score is not None else "")))
    out = [f"{k:>9}: {inert(v)}" for k, v in facts if v]
    if t.task:
        out.append(f"{'task':>9}: {one_line(t.task, 300)}")
    return "\n".join(out) + "\n\n"
