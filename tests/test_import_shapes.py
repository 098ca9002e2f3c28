"""What import makes of a file's shape: JSON Lines with lines of any length, MAD's layout without
labels, a forced --format that does not fit, and what a folder walk says of the files it meets
(unsupported producers, documentation, a folder it may not read)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from tests.samples import MAD_HUMAN, TRAJECTORIES, long_line_jsonl, unlabelled_mad

from annotator.cli import main
from annotator.importers.detect import HEAD_BYTES, read_head
from annotator.importers.registry import detect
from annotator.importers.importing import import_file, import_paths
from annotator.store.labels import current_labels

WHO_AND_WHEN = TRAJECTORIES / "who_and_when" / "Hand-Crafted_1.json"


def _invoke(*args: str):
    return CliRunner(env={"COLUMNS": "400"}).invoke(main, list(args))


# ---------------------------------------------------------------- JSON Lines with long lines


@pytest.mark.parametrize("forced", [None, "jsonl"])
def test_jsonl_whose_lines_exceed_the_head_is_json_lines(db, tmp_path, forced):
    path = long_line_jsonl(tmp_path / "runs.jsonl")
    assert path.read_bytes().index(b"\n") > HEAD_BYTES
    head = read_head(path)
    assert head.kind == "jsonl" and len(head.lines) == 1 and head.record_keys() == {"id", "task", "messages"}
    assert detect(path).name == "jsonl"
    result = import_file(db, path, fmt=forced)
    assert result.error is None and result.imported == 3
    assert result.ledger.mapped_count == 3


def test_one_long_json_document_is_still_json(tmp_path):
    path = tmp_path / "chat.json"
    path.write_bytes(orjson.dumps({"messages": orjson.loads((TRAJECTORIES / "openai_chat" /
                                                             "swe_agent_function_calling.messages.json").read_bytes()) * 12})
                     + b"\n")
    assert read_head(path).kind == "json"


# ---------------------------------------------------------------- MAD's layout without labels


def test_unlabelled_mad_records_are_trajectories_to_annotate(db, tmp_path):
    path = unlabelled_mad(tmp_path / "traces.json")
    assert detect(path).name == "mad_full"
    result = import_file(db, path)
    assert (result.error, result.imported, result.labels) == (None, 4, 0)
    assert current_labels(db) == []
    human = import_paths(db, [MAD_HUMAN]).files[0]
    assert human.format == "mad_human"  # the labelled human file is still its own format


# ---------------------------------------------------------------- forcing a format that does not fit


@pytest.mark.parametrize(("fmt", "expected"), [
    ("otel_genai", "expected OpenTelemetry GenAI spans"),
    ("inspect_ai", "expected Inspect AI eval log"),
    ("mad_human", "expected MAD human-labelled records"),
])
def test_a_forced_format_says_what_it_expected_and_what_it_found(db, fmt, expected):
    result = import_file(db, WHO_AND_WHEN, fmt=fmt)
    assert result.error.startswith(f"{WHO_AND_WHEN}: not {fmt} input: {expected}")
    assert "found a JSON object with the keys 'ground_truth', 'history', 'is_corrected'" in result.error
    assert db["trajectories"].count == 0


# ---------------------------------------------------------------- what a walk says


def test_a_walk_lists_unsupported_lookalikes_and_documentation(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(WHO_AND_WHEN, folder)
    (folder / "SOURCES.md").write_text("# where these files come from\n")
    (folder / "package.json").write_text('{"name": "x", "version": "1.0.0"}')
    sharegpt = [{"id": "a1", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]}]
    (folder / "sharegpt.json").write_bytes(orjson.dumps(sharegpt))
    res = _invoke("--db", str(tmp_path / "m.db"), "import", str(folder))
    assert res.exit_code == 0, res.output
    assert f"skipped        {folder / 'SOURCES.md'}: not a trajectory" in res.stdout
    assert f"skipped        {folder / 'package.json'}: not a trajectory" in res.stdout
    assert (f"unsupported    {folder / 'sharegpt.json'}: looks like a JSON array of objects with the keys "
            "'conversations', 'id': a trajectory of a producer no importer reads") in res.stdout
    assert "4 file(s): 1 imported" in res.stdout and "2 skipped (not a trajectory), 1 unsupported" in res.stdout


def test_mad_warnings_are_said_when_written_not_on_an_unchanged_reimport(tmp_path):
    db = str(tmp_path / "m.db")
    first = _invoke("--db", db, "import", str(MAD_HUMAN))
    assert first.stdout.count("has no final MAST id") == 11
    again = _invoke("--db", db, "import", str(MAD_HUMAN))
    assert "4 unchanged" in again.stdout and "has no final MAST id" not in again.stdout


def _as_unprivileged() -> list[str]:
    """A command prefix under which file permissions hold: none for an ordinary user; for root
    (who reads anything) a user namespace with no mapping, else the ``nobody`` user."""
    if os.geteuid() != 0:
        return []
    for prefix in (["unshare", "--user"], ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]):
        if shutil.which(prefix[0]) and subprocess.run([*prefix, sys.executable, "-c", ""],
                                                      capture_output=True).returncode == 0:
            return prefix
    pytest.skip("no way to drop root's file access here (unshare and setpriv both refused)")


def test_a_folder_that_cannot_be_read_is_one_error_and_the_rest_imports():
    prefix = _as_unprivileged()
    # Under /tmp itself: a user without privileges must reach it (pytest's tmp_path is private).
    top = Path(tempfile.mkdtemp(prefix="mast-perm-"))
    try:
        top.chmod(0o777)
        data = top / "runs"
        (data / "locked").mkdir(parents=True)
        for f in (WHO_AND_WHEN, TRAJECTORIES / "who_and_when" / "Hand-Crafted_4.json"):
            shutil.copy(f, data)
        shutil.copy(WHO_AND_WHEN, data / "locked")
        for p in [data, *data.rglob("*")]:
            p.chmod(0o777 if p.is_dir() else 0o644)
        (data / "locked").chmod(0)
        res = subprocess.run([*prefix, sys.executable, "-m", "annotator.cli", "--db", str(top / "m.db"), "import",
                              str(data)], capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
        assert res.returncode == 1, res.stderr
        assert "Traceback" not in res.stderr
        assert "3 file(s): 2 imported, 0 updated, 0 unchanged, 0 labels, 1 failed" in res.stdout
        failed = [line for line in res.stderr.splitlines() if line.startswith("failed:")]
        assert failed == [f"failed: {data / 'locked'}: cannot read the folder: Permission denied"]
    finally:
        (top / "runs" / "locked").chmod(stat.S_IRWXU)
        shutil.rmtree(top)
