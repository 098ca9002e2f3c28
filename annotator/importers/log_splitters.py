"""Splitting unstructured agent logs into steps, one splitter per known system plus a fallback.

MAD's ``trace.trajectory`` (and plain ``.log``/``.txt`` runs) is raw log text: ChatDev phase
logs, MetaGPT role logs, AG2 console chats, AppWorld task logs, HyperAgent INFO lines,
Magentic-One console output, OpenManus loguru lines. Each splitter finds its system's turn
delimiters and yields one step per block with the agent its markers name; the text of every
block is kept as it was. What a system logs about its own plumbing (ChatDev's HTTP requests and
its "online log" notices) is no step: such blocks are counted, by reason, in the result's
``dropped``. :func:`split_log` picks the splitter for a system name (or the one whose markers
the text carries) and falls back to blank-line blocks.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from annotator.importers.line_search import first_line_match, line_matches
from annotator.models import Step

Splitter = Callable[[str], list[Step]]


@dataclass(frozen=True)
class _Known:
    system: str
    marker: re.Pattern[str]
    split: Splitter


#: Splitters by normalised system name; ``_KNOWN`` keeps registration order for guessing.
_SPLITTERS: dict[str, Splitter] = {}
_KNOWN: list[_Known] = []

#: Characters of a log looked at to recognise the system that wrote it.
GUESS_CHARS = 64 * 1024

_ANSI = r"(?:\x1b\[[0-9;]*m)*"


def splitter(system: str, *aliases: str, marker: str) -> Callable[[Splitter], Splitter]:
    """Register a splitter for a system (and aliases); ``marker`` recognises the system's logs."""

    def inner(fn: Splitter) -> Splitter:
        for name in (system, *aliases):
            _SPLITTERS[_key(name)] = fn
        _KNOWN.append(_Known(system, re.compile(marker, re.M), fn))
        return fn

    return inner


def _key(system: str) -> str:
    return re.sub(r"[^a-z0-9]", "", system.lower())


def known_systems() -> list[str]:
    """The systems with a splitter of their own, in the order they are tried."""
    return [k.system for k in _KNOWN]


def guess_system(text: str) -> str | None:
    """The system whose log markers appear in the start of ``text``, or None."""
    head = text[:GUESS_CHARS]
    for known in _KNOWN:
        if known.marker.search(head):
            return known.system
    return None


def split_log(text: str, system: str | None = None) -> Split:
    """Steps of a raw log: the named system's splitter, else the one its markers name, else blank-line blocks."""
    named = _SPLITTERS.get(_key(system or ""))
    steps = named(text) if named else Split()
    if len(steps) <= 1:
        guessed = guess_system(text)
        fn = _SPLITTERS[_key(guessed)] if guessed else None
        steps = fn(text) if fn is not None and fn is not named else steps
    if len(steps) <= 1 and not steps.dropped:
        steps = split_blocks(text)
    return steps


def split_blocks(text: str) -> Split:
    """The fallback: one ``log`` step per blank-line separated block."""
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    return Split([Step(index=i, id=f"block[{i}]", kind="log", content=b.strip("\n")) for i, b in enumerate(blocks)])


def split_on(pattern: re.Pattern[str], text: str, make: Callable[[re.Match[str], str], dict]) -> list[Step]:
    """Split ``text`` at every match of the line-anchored ``pattern``; ``make(match, block)``
    gives the step's fields from the match's named groups (see ``line_search``).

    The text before the first match becomes a ``log`` step (unless it is only a ``-----`` rule);
    every block keeps its text whole (trailing rules and blank lines aside). A block ``make``
    marks ``{"drop": reason}`` is no step: it is counted in the steps' ``dropped`` (see
    :class:`Split`) under that reason.
    """
    steps = Split()
    matches = line_matches(pattern, text)
    if not matches:
        return steps
    preamble = text[: matches[0][0]].strip("\n")
    if preamble.strip(" \t\n-"):
        steps.append(Step(index=0, id="preamble", kind="log", content=preamble))
    ends = [start for start, _ in matches[1:]] + [len(text)]
    for n, ((start, m), end) in enumerate(zip(matches, ends, strict=True)):
        block = _trim_rules(text[start:end])
        fields = {"kind": "message", **make(m, block)}
        if "drop" in fields:
            steps.dropped[fields["drop"]] += 1
            continue
        steps.append(Step(index=len(steps), id=f"turn[{n}]", content=block, **fields))
    return steps


class Split(list):
    """A splitter's steps, with the blocks it left out as noise counted by reason."""

    def __init__(self, steps: list[Step] = ()) -> None:
        super().__init__(steps)
        self.dropped: Counter[str] = Counter()


def _trim_rules(block: str) -> str:
    """``block`` without trailing blank lines and ``----------`` separator rules (a regex with a
    ``$`` anchor rescans every line of a long block; this looks at the last lines only)."""
    block = block.rstrip().lstrip("\n")
    while True:
        cut = block.rfind("\n")
        last = block[cut + 1 :].strip()
        if len(last) < 10 or last.strip("-"):
            return block
        block = block[:cut].rstrip() if cut >= 0 else ""

#: "Orchestrator (-> WebSurfer)", "Orchestrator (thought)", "WebSurfer": Magentic-One speakers.
_SPEAKER = re.compile(r"^(?P<agent>[^()]+?)\s*\((?P<inner>[^)]*)\)\s*$")


def parse_speaker(label: str) -> tuple[str, str | None, str]:
    """(agent, recipient, kind) of a Magentic-One style speaker label."""
    m = _SPEAKER.match(label)
    if not m:
        return label.strip(), None, "message"
    agent, inner = m["agent"].strip(), m["inner"].strip()
    if inner.startswith("->"):
        return agent, inner[2:].strip() or None, "message"
    if inner == "thought":
        return agent, None, "thought"
    if inner == "termination condition":
        return agent, None, "plan"
    return agent, None, "message"


# ---- trailing evaluation blocks (AppWorld and others end a log with the scorer's verdict)

_EVAL_START = re.compile(r"\n\s*(\{[^\n]*\"success\"[\s\S]*\})\s*$")


def split_evaluation(text: str) -> tuple[str, dict | None]:
    """The log without a trailing JSON evaluation block, and that block (``success`` key) if any.

    The verdict bears the outcome, so it is kept out of the steps an annotator or judge sees.
    """
    m = _EVAL_START.search(text[-GUESS_CHARS:])
    if not m:
        return text, None
    try:
        verdict = orjson.loads(m[1])
    except orjson.JSONDecodeError:
        return text, None
    if not isinstance(verdict, dict) or "success" not in verdict:
        return text, None
    cut = len(text) - len(text[-GUESS_CHARS:]) + m.start()
    return text[:cut].rstrip(), verdict


# ---- ChatDev: "[2023-25-08 10:05:20 INFO] Chief Product Officer: **Chief Product Officer<->
# Chief Executive Officer on : DemandAnalysis, turn 0**", usage blocks, "System: **[chatting]**";
# the first releases (June 2023) wrote "[0] AI Assistant (Chief Product Officer):" and
# "[0] AI User (Chief Executive Officer) terminated the chat." in colour, and DEBUG lines.

_CHATDEV = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<level>[A-Z]+)\] ?(?P<rest>[^\n]*)", re.M)
_CHATDEV_TURN = re.compile(
    r"^(?P<agent>[^:*\n]+): \*\*(?P<a>[^*\n]+?)<->(?P<b>[^*\n]+?) on : (?P<phase>[^,*\n]+), turn (?P<turn>\d+)\*\*"
)
_CHATDEV_SPEAKER = re.compile(r"^(?P<agent>[A-Z][\w ]{0,40}?): ")
_CHATDEV_EARLY = re.compile(rf"^{_ANSI}\[(?P<turn>\d+)\] AI (?:Assistant|User) \((?P<agent>[^)\n]+)\)(?P<end> terminated the chat)?")
#: Lines ChatDev logs about its own plumbing, with the reason they are left out.
_CHATDEV_NOISE = (("HTTP Request:", "HTTP request log"), ("flask app.py did not start", "online-log notice"))


_CHATDEV_FACTS = {"task": re.compile(r"^\*\*task_prompt\*\*: (?P<v>[^\n]+)", re.M),
                  "model": re.compile(r"^\| \*\*model_type\*\* \| ModelType\.(?P<v>\w+) \|", re.M)}


#: MetaGPT's communication log opens with the user's requirement, from Human: its CONTENT is the task.
_METAGPT_FACTS = {"task": re.compile(
    r"^\[[^\]\n]+\] FROM: Human\b[^\n]*\nACTION: [^\n]*UserRequirement\nCONTENT:\n(?P<v>.+?)"
    r"(?=^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] |\Z)", re.M | re.S)}
_FACTS = {_key("ChatDev"): _CHATDEV_FACTS, _key("MetaGPT"): _METAGPT_FACTS}


def log_facts(text: str, system: str | None) -> dict[str, str]:
    """The task and model a log states: ChatDev's ``**task_prompt**`` line and the ``model_type``
    of its first phase's parameter table; the CONTENT of MetaGPT's UserRequirement message."""
    facts = _FACTS.get(_key(system or ""), {})
    head = text[:GUESS_CHARS]
    return {k: m["v"].strip() for k, rx in facts.items() if (m := first_line_match(rx, head))}


@splitter("ChatDev", marker=r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO\] ")
def split_chatdev(text: str) -> list[Step]:
    def make(m: re.Match[str], block: str) -> dict:
        rest = m["rest"]
        if m["level"] == "DEBUG":
            return {"drop": "debug log"}
        noise = next((reason for prefix, reason in _CHATDEV_NOISE if rest.startswith(prefix)), None)
        if noise:
            return {"drop": noise}
        turn = _CHATDEV_TURN.match(rest)
        if turn:
            recipient = turn["b"].strip() if turn["a"].strip() == turn["agent"].strip() else turn["a"].strip()
            return {"agent": turn["agent"].strip(), "recipient": recipient,
                    "group": f"{turn['phase'].strip()}, turn {turn['turn']}"}
        early = _CHATDEV_EARLY.match(rest)
        if early:
            return {"agent": early["agent"].strip(), "kind": "event" if early["end"] else "message",
                    "group": f"turn {early['turn']}"}
        if rest.startswith("**[OpenAI_Usage_Info"):
            return {"kind": "event", "group": "usage"}
        speaker = _CHATDEV_SPEAKER.match(rest)
        if speaker and speaker["agent"] != "System":
            return {"agent": speaker["agent"].strip()}
        return {"kind": "log", "agent": "System" if speaker else None}

    return split_on(_CHATDEV, text, make)


# ---- MetaGPT: loguru lines ("2025-01-17 11:40:27.872 | INFO | metagpt.roles.role:_act:391 -
# Alice(SimpleCoder): ...") or the communication log ("[2025-03-27 01:21:03] FROM: Human TO:
# {'<all>'}" + ACTION/CONTENT, "[...] NEW MESSAGES:" + "SimpleCoder: ...").

_METAGPT_LOGURU = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \| \w+\s*\| [^\n]*? - (?:(?P<name>\w+)\((?P<role>\w+)\):)?",
    re.M,
)
_METAGPT_COMM = re.compile(
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] (?:FROM: (?P<from>\S+)(?: TO: (?P<to>[^\n]*))?|NEW MESSAGES:)", re.M
)
_METAGPT_SPEAKER = re.compile(r"^(?P<who>[A-Z][A-Za-z]+):[ \t]*(?:\n|$|\S)", re.M)


@splitter("MetaGPT", marker=r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] (?:FROM: |NEW MESSAGES:)|\| metagpt\.")
def split_metagpt(text: str) -> list[Step]:
    if first_line_match(_METAGPT_COMM, text) is not None:
        return split_on(_METAGPT_COMM, text, _metagpt_comm)
    return split_on(_METAGPT_LOGURU, text, _metagpt_loguru)


def _metagpt_comm(m: re.Match[str], block: str) -> dict:
    if m["from"]:
        to = (m["to"] or "").strip().strip("{}").replace("'", "").strip() or None
        return {"agent": m["from"], "recipient": None if to == "<all>" else to}
    body = block.split("\n", 1)[1] if "\n" in block else ""
    who = _METAGPT_SPEAKER.search(body)
    return {"agent": who["who"] if who else None}


def _metagpt_loguru(m: re.Match[str], block: str) -> dict:
    if m["role"]:
        return {"agent": m["role"], "attributes": {"name": m["name"]}}
    return {"kind": "log"}


# ---- AG2 console output: "mathproxyagent (to assistant):" ... "-----" rules, plus
# ">>>>>>>> EXECUTING CODE BLOCK 0 (inferred language is python)..." lines.

_AG2 = re.compile(
    rf"^{_ANSI}(?:(?P<agent>[\w.\-]+) \(to (?P<to>[\w.\-]+)\):{_ANSI}[ \t]*$|>>>>>>>> (?P<event>[^\n]*))", re.M
)


@splitter("AG2", "AutoGen", "MathChat", "CaptainAgent", marker=r"^(?:\x1b\[[0-9;]*m)*[\w.\-]+ \(to [\w.\-]+\):")
def split_ag2(text: str) -> list[Step]:
    def make(m: re.Match[str], block: str) -> dict:
        if m["event"] is not None:
            return {"kind": "event"}
        return {"agent": m["agent"], "recipient": m["to"]}

    return split_on(_AG2, text, make)


# ---- AppWorld: "**** Task 1/30 (82e2fac_1) ****", "Response from Supervisor Agent",
# "Message to Spotify Agent"; a trailing evaluation JSON is handled by split_evaluation.

_APPWORLD = re.compile(
    r"^(?:\*{3,} Task (?P<n>\d+)/(?P<of>\d+) \((?P<task>[^)\n]*)\) \*{3,}"
    r"|Response from (?P<from>[^\n]+?) Agent|Message to (?P<to>[^\n]+?) Agent)[ \t]*$",
    re.M,
)


@splitter("AppWorld", marker=r"^(?:\*{3,} Task \d+/\d+ \(|Response from [^\n]+ Agent[ \t]*$)")
def split_appworld(text: str) -> list[Step]:
    speaker: dict[str, str | None] = {"last": None}

    def make(m: re.Match[str], block: str) -> dict:
        if m["task"] is not None:
            return {"kind": "event", "group": m["task"]}
        if m["from"] is not None:
            speaker["last"] = m["from"].strip()
            return {"agent": speaker["last"]}
        return {"agent": speaker["last"], "recipient": m["to"].strip()}

    return split_on(_APPWORLD, text, make)


# ---- HyperAgent: "HyperAgent_astropy__astropy-12907 - INFO - Planner's Response: ...",
# "Intern Name: Codebase Navigator", "Subgoal: ...", "Navigator->Planner: ...".

_HYPER = re.compile(r"^HyperAgent_\S+ - (?P<level>[A-Z]+) - (?P<rest>[^\n]*)", re.M)
_HYPER_RESPONSE = re.compile(r"^(?:Inner-)?(?P<agent>[\w\- ]+?)(?:-Assistant)?'s Response:")
_HYPER_HANDOFF = re.compile(r"^(?P<agent>[\w\- ]+?)->(?P<to>[\w\- ]+?):")
_HYPER_INTERN = re.compile(r"^Intern Name: (?P<intern>[^\n]+)", re.M)


@splitter("HyperAgent", marker=r"^HyperAgent_\S+ - [A-Z]+ - ")
def split_hyperagent(text: str) -> list[Step]:
    def make(m: re.Match[str], block: str) -> dict:
        rest = m["rest"]
        response = _HYPER_RESPONSE.match(rest)
        if response:
            intern = _HYPER_INTERN.search(block)
            kind = "plan" if intern and "Subgoal:" in block else "message"
            return {"agent": response["agent"].strip(), "kind": kind,
                    "recipient": intern["intern"].strip() if intern else None}
        handoff = _HYPER_HANDOFF.match(rest)
        if handoff:
            return {"agent": handoff["agent"].strip(), "recipient": handoff["to"].strip(), "kind": "handoff"}
        return {"kind": "error" if m["level"] == "ERROR" else "log"}

    return split_on(_HYPER, text, make)


# ---- Magentic-One console: "[2024-10-21T15:32:11.123456], Orchestrator (-> WebSurfer):" with
# "-----" rules between messages (colour codes around the header are tolerated).

_MAGENTIC = re.compile(rf"^{_ANSI}\[(?P<ts>\d{{4}}-\d\d-\d\dT[^\]\n]+)\], (?P<who>[^:\n]+):{_ANSI}[ \t]*$", re.M)


@splitter("Magentic-One", "MagenticOne", marker=r"^(?:\x1b\[[0-9;]*m)*\[\d{4}-\d\d-\d\dT[^\]\n]+\], [^:\n]+:")
def split_magentic_one(text: str) -> list[Step]:
    def make(m: re.Match[str], block: str) -> dict:
        agent, recipient, kind = parse_speaker(m["who"])
        return {"agent": agent, "recipient": recipient, "kind": kind, "attributes": {"timestamp": m["ts"]}}

    return split_on(_MAGENTIC, text, make)


# ---- OpenManus: loguru lines "2025-03-10 12:00:05.456 | INFO | app.agent.toolcall:think:53 -
# ✨ Manus's thoughts: ...", "Executing step 3/20", "🔧 Activating tool: 'python_execute'...",
# "🎯 Tool 'python_execute' completed its mission! Result: ...".

_MANUS = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \| (?P<level>[A-Z]+)\s*\| [^\n]*? - (?P<rest>[^\n]*)", re.M)
_MANUS_STEP = re.compile(r"Executing step (?P<k>\d+)/(?P<n>\d+)")
_MANUS_THOUGHT = re.compile(r"(?P<agent>[\w\-]+)'s thoughts:")
_MANUS_ACTIVATE = re.compile(r"Activating tool: '(?P<tool>[^']+)'")
_MANUS_DONE = re.compile(r"Tool '(?P<tool>[^']+)' completed")


@splitter("OpenManus", "Manus", marker=r"\| [^\n]*? - (?:Executing step \d+/\d+|\W*[\w\-]+'s thoughts:)")
def split_openmanus(text: str) -> list[Step]:
    state: dict[str, str | None] = {"agent": None, "group": None}

    def make(m: re.Match[str], block: str) -> dict:
        rest = m["rest"]
        if (step := _MANUS_STEP.search(rest)) is not None:
            state["group"] = f"step {step['k']}"
            return {"kind": "event", "group": state["group"]}
        if (thought := _MANUS_THOUGHT.search(rest)) is not None:
            state["agent"] = thought["agent"]
            return {"kind": "thought", "agent": state["agent"], "group": state["group"]}
        fields: dict = {"agent": state["agent"], "group": state["group"], "kind": "log"}
        if (call := _MANUS_ACTIVATE.search(rest)) is not None:
            fields.update(kind="tool_call", tool_name=call["tool"])
        elif (done := _MANUS_DONE.search(rest)) is not None:
            fields.update(kind="tool_result", tool_name=done["tool"])
        elif m["level"] in ("ERROR", "CRITICAL"):
            fields["kind"] = "error"
        return fields

    return split_on(_MANUS, text, make)
