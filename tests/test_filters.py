"""One trajectory filter: the same flags and --help words in every command that filters, times
without a zone read as UTC, and runs recorded with the older option names still resume."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from annotator.cli import main
from annotator.errors import ReportError
from annotator.labelling.judge import JudgeSettings
from annotator.labelling.prelabel import PrelabelOptions
from annotator.report.document import build_report
from annotator.report.output import atomic_file
from annotator.taxonomy import load_taxonomy
from annotator.views import TrajectoryFilter

FILTERING = ("list", "prelabel", "report", "agreement", "export")
FILTER_FIELDS = ("system", "model", "benchmark", "outcome", "source_format", "since", "until", "tag")


def _filter_options(command: str) -> dict[str, tuple[tuple[str, ...], str]]:
    params = {p.name: p for p in main.commands[command].params}
    return {name: (tuple(params[name].opts), params[name].help) for name in FILTER_FIELDS}


def test_every_filtering_command_has_the_same_filter_flags_and_words():
    reference = _filter_options("report")
    assert reference["model"][0] == ("--model",) and reference["source_format"][0] == ("--source-format",)
    for command in FILTERING:
        options = _filter_options(command)
        assert {k: help for k, (_, help) in options.items()} == {k: help for k, (_, help) in reference.items()}, command
        for name, (flags, _) in options.items():
            if command == "prelabel" and name == "model":
                assert flags == ("--source-model",)  # --model is the judge there
            elif command == "list" and name == "source_format":
                assert flags == ("--source-format", "--format")
            else:
                assert flags == reference[name][0], (command, name)


def test_a_time_without_a_zone_is_utc_and_one_with_a_zone_is_kept():
    naive = TrajectoryFilter(since=datetime(2026, 3, 1), until="2026-03-02T10:00:00")
    assert naive.since == datetime(2026, 3, 1, tzinfo=UTC) and naive.until.tzinfo == UTC
    aware = TrajectoryFilter(since="2026-03-01T00:00:00+02:00")
    assert aware.since.utcoffset().total_seconds() == 7200
    assert TrajectoryFilter(system="AG2", tag="pilot").active() == {"system": "AG2", "tag": "pilot"}


def test_options_of_a_run_recorded_before_the_shared_filter_still_load():
    old = {"labeller": "rules", "ids": ["t1"], "system": "AG2", "source_model": "gpt-4o", "benchmark": None,
           "outcome": "failure", "limit": 3}
    opts = PrelabelOptions.model_validate(old)
    assert opts.trajectories == TrajectoryFilter(ids=["t1"], system="AG2", model="gpt-4o", outcome="failure")
    assert PrelabelOptions.model_validate(opts.model_dump(mode="json")) == opts


def test_the_judges_temperature_follows_the_votes_unless_given():
    assert [JudgeSettings(models=["m"], samples=n).temperature for n in (1, 3)] == [0.0, 0.7]
    assert JudgeSettings(models=["m"], samples=3, temperature=0.2).temperature == 0.2


def test_grouping_columns_are_checked_by_the_report(db):
    with pytest.raises(ReportError, match=r"unknown column\(s\) colour to group by; choose from system, model"):
        build_report(db, "alice", load_taxonomy(), by=("system", "colour"))


def test_a_file_written_atomically_is_whole_or_untouched(tmp_path):
    path = tmp_path / "report.html"
    path.write_text("the previous report")
    with pytest.raises(RuntimeError), atomic_file(path) as fh:
        fh.write("half of a new one")
        raise RuntimeError("rendering failed")
    assert path.read_text() == "the previous report" and list(tmp_path.iterdir()) == [path]
    with atomic_file(path) as fh:
        fh.write("the new report")
    assert path.read_text() == "the new report" and list(tmp_path.iterdir()) == [path]
    with pytest.raises(ReportError, match="no-such-folder/report.html: cannot write"):
        with atomic_file(tmp_path / "no-such-folder" / "report.html") as fh:
            fh.write("x")
