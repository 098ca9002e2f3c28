"""Bad input: each problem is one clear line naming the file (and line or record), the other
files still import, a failed file leaves nothing behind, and the CLI exits non-zero."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from annotator.cli import main
from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file, import_paths
from annotator.store.labels import current_labels
from annotator.store.trajectories import list_trajectories

GOOD_CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def _mad_record(n: int, **over) -> dict:
    rec = {"mas_name": "ChatDev", "llm_name": "GPT-4o", "benchmark_name": "ProgramDev", "trace_id": n,
           "trace": {"trajectory": f"first block {n}\n\nsecond block"},
           "mast_annotation": {"1.1": 1, "2.2": 0}}
    rec.update(over)
    return rec


CASES = {
    "malformed.json": (b'{"history": [{"content": "x"},', "malformed JSON", "line 1"),
    "wrong_shape.json": (
        orjson.dumps({"history": {"0": "x"}, "mistake_agent": "A", "mistake_step": "0"}),
        "'history' must be a list of messages", None,
    ),
    "bad_utf8.json": (b'{"messages": [{"role": "user",\n "content": "caf\xe9"}]}', "invalid UTF-8", "line 2"),
    "binary.bin": (bytes(range(256)) * 4, "binary file", None),
    "empty.json": (b"", "empty file", None),
    "blank.txt": (b"  \n\n \t\n", "empty file", None),
    "unknown.json": (b'{"foo": 1, "bar": [1, 2]}', "unknown format", None),
    "missing_keys.json": (
        orjson.dumps([_mad_record(1), {"mas_name": "ChatDev", "mast_annotation": {}}]),
        "missing required key(s): trace", "record 2",
    ),
    "bad_line.jsonl": (
        b'{"messages": [{"role": "user", "content": "a"}]}\n{"messages": [{"role": "user", "content": "b"}]}\n'
        b'{"messages": [ oops\n{"messages": []}\n',
        "malformed JSON line", "line 3",
    ),
    "bad_record.jsonl": (
        b'{"steps": ["a", "b"]}\n{"steps": ["c"]}\n{"title": "no steps here"}\n',
        "no 'messages', 'steps' or 'trajectory' list", "line 3",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_bad_file_is_one_clear_line(db, tmp_path, name):
    data, reason, where = CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    result = import_file(db, path)
    assert not result.ok
    assert "\n" not in result.error
    assert result.error.startswith(f"{path}:" if where is None else f"{path}:{where}")
    assert reason in result.error
    assert list_trajectories(db) == []  # nothing half-imported
    assert current_labels(db) == []


def test_file_over_the_size_limit(db, tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(orjson.dumps(GOOD_CHAT))
    result = import_file(db, path, opts=ImportOptions(max_bytes=10))
    assert result.error == f"{path}: file is {path.stat().st_size:,} bytes, over the import limit of 10 bytes"


def test_missing_file_and_unknown_forced_format(db, tmp_path):
    assert import_file(db, tmp_path / "nope.json").error == f"{tmp_path / 'nope.json'}: no such file"
    path = tmp_path / "chat.json"
    path.write_bytes(orjson.dumps(GOOD_CHAT))
    error = import_file(db, path, fmt="no_such_format").error
    assert error.startswith(f"{path}: unknown --format 'no_such_format'; choose from ")


def test_a_bad_record_rolls_back_the_good_ones_before_it(db, tmp_path):
    path = tmp_path / "mad.json"
    path.write_bytes(orjson.dumps([_mad_record(1), _mad_record(2), _mad_record(3, mast_annotation=[1, 0])]))
    result = import_file(db, path)
    assert result.error == f"{path}:record 3: 'mast_annotation' must be an object"
    assert result.imported == 0 and result.trajectory_ids == []
    assert list_trajectories(db) == [] and current_labels(db) == []


def test_wrong_type_deep_inside_names_the_record(db, tmp_path):
    path = tmp_path / "mad.json"
    path.write_bytes(orjson.dumps([_mad_record(1), _mad_record(2, mas_name={"x": 1})]))
    assert import_file(db, path).error == f"{path}:record 2: 'mas_name' must be text, got dict"


def test_skip_bad_lines_imports_the_rest_and_counts_them(db, tmp_path):
    path = tmp_path / "bad_line.jsonl"
    path.write_bytes(CASES["bad_line.jsonl"][0] + b"not json at all\n")
    result = import_file(db, path, opts=ImportOptions(skip_bad_lines=True))
    assert result.ok, result.error
    assert result.skipped_lines == [3, 5]
    assert result.imported == 3


def test_other_files_still_import(db, tmp_path):
    tmp_path = tmp_path / "in"
    tmp_path.mkdir()
    for name, (data, _, _) in CASES.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "good.json").write_bytes(orjson.dumps(GOOD_CHAT))
    summary = import_paths(db, [tmp_path])
    # a folder walk passes over files no importer recognises; every other bad file is a failure
    walk_skips = {"binary.bin", "unknown.json"}
    assert sorted(Path(f.path).name for f in summary.failed) == sorted(set(CASES) - walk_skips)
    assert sorted(Path(f.path).name for f in summary.files if f.skipped) == sorted(walk_skips)
    assert [f.path for f in summary.files if f.ok and not f.skipped] == [str(tmp_path / "good.json")]
    assert len(list_trajectories(db)) == 1


def test_cli_reports_each_failure_and_exits_non_zero(tmp_path):
    for name in ("malformed.json", "empty.json", "unknown.json"):
        (tmp_path / name).write_bytes(CASES[name][0])
    (tmp_path / "good.json").write_bytes(orjson.dumps(GOOD_CHAT))
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "import", str(tmp_path)])
    assert result.exit_code == 1
    assert "4 file(s): 1 imported, 0 updated, 0 unchanged, 0 labels, 2 failed, 1 skipped" in result.stdout
    failures = [line for line in result.stderr.splitlines() if line.startswith("failed: ")]
    assert len(failures) == 2
    assert any(str(tmp_path / "empty.json") in line and "empty file" in line for line in failures)


def test_cli_exit_code_zero_when_all_import(tmp_path):
    (tmp_path / "good.json").write_bytes(orjson.dumps(GOOD_CHAT))
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "import", str(tmp_path / "good.json")])
    assert result.exit_code == 0, result.output


def test_broken_zip_is_reported(db, tmp_path):
    path = tmp_path / "broken.eval"
    path.write_bytes(b"PK\x03\x04" + b"\x00garbage" * 10)
    assert "broken zip archive" in import_file(db, path).error


def test_text_log_with_invalid_utf8_deep_inside(db, tmp_path):
    path = tmp_path / "run.log"
    path.write_bytes(b"line one\n" * 20000 + b"bad \xff byte\n")
    error = import_file(db, path).error
    assert error.startswith(f"{path}:line 20001: invalid UTF-8")


def test_truncated_big_json_array_names_the_record(tmp_path, monkeypatch):
    from annotator.errors import ImportFailure
    from annotator.importers import reading
    from annotator.importers.registry import registry

    monkeypatch.setattr(reading, "WHOLE_JSON_BYTES", 100)  # stream this small file with ijson
    path = tmp_path / "mad.json"
    data = orjson.dumps([_mad_record(1), _mad_record(2), _mad_record(3)])
    path.write_bytes(data[: len(data) - 40])
    seen = []
    with pytest.raises(ImportFailure) as exc:
        for rec in registry()["mad_full"].read(path, ImportOptions()):
            seen.append(rec.trajectory.metadata["trace_id"])
    assert seen == [1, 2]
    assert str(exc.value).startswith(f"{path}:record 3: malformed JSON after record 2")


def test_stdout_stays_clean_of_errors(tmp_path: Path):
    (tmp_path / "empty.json").write_bytes(b"")
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "m.db"), "import", str(tmp_path / "empty.json")])
    assert "failed:" not in result.stdout and "empty file" in result.stderr
