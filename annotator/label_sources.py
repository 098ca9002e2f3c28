"""Label sources: the names whose labels stand in the store, and what kind of source each is.

Every label is stored under an annotator name, and every floor has to tell from that name
whose labels they are: the TUI offers a run's labels as suggestions, a run writes only under
its own name, a report counts a person's finished trajectories and reads a judge against the
human ceiling. This module is the one place that knows the grammar of those names:

- ``run:<id>``: a pre-labelling run (:class:`annotator.models.LabelRun` ``id``);
- ``consensus`` or ``consensus:alice,bob``: computed, never stored: per mode the majority of
  the people (all who marked trajectories done, or the ones named);
- ``adjudicated``: decisions taken over two people's disagreements, stored under that name;
- any other name is stored as it is: a **person** when it has review states (someone working
  in the annotator), otherwise an **imported set**, of human ratings (MAD's ``mad-human-1..3``,
  labels restored from an export of a person's) or of a judge (``mad-llm``).

The grammar decides runs and consensus without the store; a stored name is classified from the
few facts one query gathers (:class:`SourceFacts`). A new kind is one more entry in
:data:`KINDS` and, when its name decides it, in :data:`_PREFIXED`, as ``adjudicated`` is
(decisions over two people's disagreements, ``annotating.adjudication``). It lives beside ``models`` rather than in it because it is a
naming rule, not a persisted shape: nothing here carries a schema version.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SourceKind(StrEnum):
    """What a label source is; the value is what reports and ``mast sources --json`` print."""

    PERSON = "person"
    RUN = "run"
    IMPORTED_HUMAN = "imported-human"
    IMPORTED_JUDGE = "imported-judge"
    CONSENSUS = "consensus"
    ADJUDICATED = "adjudicated"


@dataclass(frozen=True)
class KindInfo:
    """What every floor needs to know about a kind of source."""

    title: str  # how a listing names the kind
    human: bool  # labels made by people (the human ceiling of an agreement is read from these)
    stored: bool  # labels stand under the name itself (consensus is computed from its members)
    finished: str  # which trajectories count as finished, in the words a report uses


KINDS: dict[SourceKind, KindInfo] = {
    SourceKind.PERSON: KindInfo("person", True, True, "trajectories marked done"),
    SourceKind.RUN: KindInfo("run", False, True, "trajectories with a verdict on every mode it covers"),
    SourceKind.IMPORTED_HUMAN: KindInfo("imported human set", True, True, "trajectories it has labels for"),
    SourceKind.IMPORTED_JUDGE: KindInfo("imported judge set", False, True, "trajectories it has labels for"),
    SourceKind.CONSENSUS: KindInfo("consensus", True, False, "trajectories at least one of its people finished"),
    SourceKind.ADJUDICATED: KindInfo("adjudicated", True, True, "trajectories whose disagreements were all decided"),
}

RUN = "run"
CONSENSUS = "consensus"
#: Decisions taken over two people's disagreements, stored under this one name (who decided,
#: and between whom, in each label's ``extra``).
ADJUDICATED = "adjudicated"
#: Name prefixes (before the colon) that decide the kind by themselves.
_PREFIXED = {RUN: SourceKind.RUN, CONSENSUS: SourceKind.CONSENSUS, ADJUDICATED: SourceKind.ADJUDICATED}

#: ``extra.source`` of imported labels that people made (MAD's three human annotators).
HUMAN_SET = "mad-human"
#: Label provenances that mean a person decided (typed it, or accepted a suggestion).
HUMAN_PROVENANCE = frozenset({"human", "accepted"})


@dataclass(frozen=True)
class SourceName:
    """A source name taken apart: its kind where the name alone decides it, and its parts."""

    name: str
    kind: SourceKind | None  # None: a stored name, classified by :func:`classify`
    run_id: int | None = None
    members: tuple[str, ...] = ()  # consensus: the people named (empty: all who finished some)


def parse(name: str) -> SourceName:
    """Take a source name apart (no store needed). ``run:x`` with a non-integer x is a stored name."""
    prefix, colon, rest = name.partition(":")
    kind = _PREFIXED.get(prefix)
    if kind is SourceKind.CONSENSUS and (colon or not rest):
        return SourceName(name, kind, members=tuple(dict.fromkeys(m for m in rest.split(",") if m)))
    if kind is SourceKind.RUN and colon and rest.isdigit():
        return SourceName(name, kind, run_id=int(rest))
    if kind is SourceKind.ADJUDICATED and not colon:
        return SourceName(name, kind)
    return SourceName(name, None)


def run_source(run_id: int) -> str:
    """The annotator name a run's labels are stored under."""
    return f"{RUN}:{run_id}"


def consensus_source(members: tuple[str, ...] | list[str] = ()) -> str:
    """``consensus`` over everyone who finished trajectories, or ``consensus:a,b`` over the people named."""
    return f"{CONSENSUS}:{','.join(members)}" if members else CONSENSUS


def is_run(name: str) -> bool:
    """Whether labels under this name come from a pre-labelling run (machine suggestions)."""
    return parse(name).kind is SourceKind.RUN


def is_stored(name: str) -> bool:
    """Whether labels stand under the name itself (every kind but computed ones such as consensus)."""
    kind = parse(name).kind
    return kind is None or KINDS[kind].stored


@dataclass(frozen=True)
class SourceFacts:
    """What the store knows about a stored name, as one query reads it."""

    reviewed: bool  # has a review state on some trajectory
    labelled: bool  # has a current label
    provenance: str | None = None  # of one current label (an imported set is written by one importer)
    origin: str | None = None  # that label's ``extra.source``
    run_kind: str | None = None  # the run's labeller, when the name is ``run:<id>`` of a stored run
    run_detail: str = ""


def classify(parsed: SourceName, facts: SourceFacts) -> SourceKind:
    """The kind of a parsed name given the store's facts about it.

    Review states make a person, even under a ``run:`` name (the store never writes one there);
    a ``run:<id>`` whose run is gone is read as the imported set it has become.
    """
    if parsed.kind in (SourceKind.CONSENSUS, SourceKind.ADJUDICATED):
        return parsed.kind
    if facts.reviewed:
        return SourceKind.PERSON
    if parsed.kind is SourceKind.RUN and facts.run_kind is not None:
        return SourceKind.RUN
    if facts.provenance in HUMAN_PROVENANCE or facts.origin == HUMAN_SET:
        return SourceKind.IMPORTED_HUMAN
    return SourceKind.IMPORTED_JUDGE
