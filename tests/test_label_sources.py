"""The label source vocabulary: names taken apart and put together, kinds from the store's facts."""

from __future__ import annotations

import pytest

from annotator.label_sources import (
    HUMAN_SET,
    KINDS,
    SourceFacts,
    SourceKind,
    classify,
    consensus_source,
    is_run,
    is_stored,
    parse,
    run_source,
)


@pytest.mark.parametrize(
    ("name", "kind", "run_id", "members"),
    [
        ("run:3", SourceKind.RUN, 3, ()),
        ("run:x", None, None, ()),
        ("run:", None, None, ()),
        ("running", None, None, ()),
        ("consensus", SourceKind.CONSENSUS, None, ()),
        ("consensus:alice,bob,alice", SourceKind.CONSENSUS, None, ("alice", "bob")),
        ("consensusbob", None, None, ()),
        ("mad-human-2", None, None, ()),
    ],
)
def test_parse(name, kind, run_id, members):
    parsed = parse(name)
    assert (parsed.kind, parsed.run_id, parsed.members) == (kind, run_id, members)


def test_format_round_trips():
    assert run_source(12) == "run:12" and parse(run_source(12)).run_id == 12
    assert consensus_source() == "consensus"
    assert parse(consensus_source(["a", "b"])).members == ("a", "b")
    assert is_run("run:1") and not is_run("alice")
    assert is_stored("alice") and is_stored("run:1") and not is_stored("consensus:a,b")


@pytest.mark.parametrize(
    ("name", "facts", "kind"),
    [
        ("alice", SourceFacts(reviewed=True, labelled=True, provenance="human"), SourceKind.PERSON),
        ("run:1", SourceFacts(reviewed=False, labelled=True, provenance="rules", run_kind="rules"), SourceKind.RUN),
        # the run was deleted: its labels are an imported judge set now
        ("run:9", SourceFacts(reviewed=False, labelled=True, provenance="llm"), SourceKind.IMPORTED_JUDGE),
        ("mad-human-1", SourceFacts(False, True, "imported", HUMAN_SET), SourceKind.IMPORTED_HUMAN),
        ("restored", SourceFacts(False, True, "accepted"), SourceKind.IMPORTED_HUMAN),
        ("mad-llm", SourceFacts(False, True, "imported", "mad"), SourceKind.IMPORTED_JUDGE),
        ("consensus", SourceFacts(False, False), SourceKind.CONSENSUS),
    ],
)
def test_classify(name, facts, kind):
    assert classify(parse(name), facts) is kind


def test_every_kind_is_described():
    assert set(KINDS) == set(SourceKind)
    assert [k for k in SourceKind if KINDS[k].human] == [
        SourceKind.PERSON, SourceKind.IMPORTED_HUMAN, SourceKind.CONSENSUS, SourceKind.ADJUDICATED
    ]
    assert classify(parse("adjudicated"), SourceFacts(reviewed=False, labelled=True, provenance="human")) \
        is SourceKind.ADJUDICATED
