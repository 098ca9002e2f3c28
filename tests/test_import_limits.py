"""Inputs refused before they cost memory: JSON nested absurdly deep, zip archives that inflate
like a bomb or past --max-size. Each is one line naming the file; the rest of a walk imports.
(Peak memory itself is measured in benchmarks/bench_import_limits.py, not here.)"""

from __future__ import annotations

import shutil
import zipfile

import orjson
import pytest
from click.testing import CliRunner
from tests.samples import TRAJECTORIES

from annotator.cli import main
from annotator.importers.base import ImportOptions
from annotator.importers.detect import MAX_NESTING, ZIP_FLOOR, nesting
from annotator.importers.importing import import_file

INSPECT_EVAL = TRAJECTORIES.parent / "tests" / "fixtures" / "inspect_ai" / "log_message_deduplication.eval"


def test_nesting_ignores_brackets_in_strings():
    assert nesting(b'{"a": [1, {"b": "[[[[\\"[["}], "c": {}}') == 3
    assert nesting(b"[" * 5000 + b"]" * 5000) == 5000


@pytest.mark.parametrize("name", ["deep.json", "deep.txt"])
def test_json_nested_too_deep_is_refused_in_one_line(db, tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
    result = import_file(db, path)
    assert result.error == f"{path}: JSON nested deeper than {MAX_NESTING:,} levels: refused"


def test_a_deep_file_in_a_folder_fails_alone(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(TRAJECTORIES / "who_and_when" / "Hand-Crafted_1.json", folder)
    (folder / "deep.json").write_bytes(b"{\"a\":" * 50_000 + b"1" + b"}" * 50_000)
    res = CliRunner(env={"COLUMNS": "400"}).invoke(main, ["--db", str(tmp_path / "m.db"), "import", str(folder)])
    assert "2 file(s): 1 imported" in res.stdout and "1 failed" in res.stdout
    assert "deep.json: JSON nested deeper than 1,000 levels: refused" in res.stderr


def _bomb(path, inflated: int):
    """An Inspect-shaped .eval whose one sample is ``inflated`` bytes, mostly spaces."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("header.json", orjson.dumps({"version": 2, "eval": {"task": "t", "model": "m"}}))
        with zf.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
            fh.write(b'{"id": 1, "epoch": 1, "input": "')
            chunk = b" " * 1024**2
            for _ in range(inflated // len(chunk)):
                fh.write(chunk)
            fh.write(b'", "messages": []}')
    return path


def test_a_zip_bomb_is_refused_before_it_is_inflated(db, tmp_path):
    path = _bomb(tmp_path / "bomb.eval", ZIP_FLOOR + 1024**2)
    result = import_file(db, path)
    assert result.error.startswith(f"{path}: zip archive would inflate ")
    assert result.error.endswith(" bytes: refused as a zip bomb")
    forced = import_file(db, path, fmt="inspect_ai")
    assert forced.error == result.error


def test_max_size_caps_what_a_zip_inflates_to(db, tmp_path):
    path = tmp_path / "log.eval"
    shutil.copy(INSPECT_EVAL, path)
    inflated = sum(i.file_size for i in zipfile.ZipFile(path).infolist())
    assert path.stat().st_size < inflated  # the cap is on what it inflates to, not on the file
    result = import_file(db, path, opts=ImportOptions(max_bytes=inflated - 1))
    assert result.error == (f"{path}: zip archive inflates to {inflated:,} bytes, over the import limit of"
                            f" {inflated - 1:,} bytes (--max-size)")
    assert import_file(db, path, opts=ImportOptions(max_bytes=inflated)).imported >= 1
