"""Versions are checked where they are read: an export line of a newer schema and a database a
newer release migrated are refused with one line naming both versions, and nothing is written."""

from __future__ import annotations

import sqlite3

import orjson
from click.testing import CliRunner
from tests.report_data import known_prevalence_db

from annotator import __version__
from annotator.cli import main
from annotator.models import SCHEMA_VERSION
from annotator.report import export
from annotator.store import open_db
from annotator.store.schema import MIGRATIONS
from annotator.taxonomy import load_taxonomy


def _export_lines(tmp_path) -> list[dict]:
    source = open_db(tmp_path / "source.db")
    known_prevalence_db(source)
    rows = [orjson.loads(line) for line in export.render(source, "jsonl", ["alice"], load_taxonomy()).splitlines()]
    source.close()
    assert rows and all(r["schema_version"] == SCHEMA_VERSION for r in rows)
    return rows


def _counts(path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT (SELECT count(*) FROM trajectories), (SELECT count(*) FROM labels)").fetchone()


def test_an_export_line_of_a_newer_schema_is_refused_and_nothing_is_written(tmp_path):
    rows = _export_lines(tmp_path)
    rows[len(rows) // 2]["schema_version"] = SCHEMA_VERSION + 1
    path = tmp_path / "newer.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    db_path = tmp_path / "target.db"
    result = CliRunner().invoke(main, ["--db", str(db_path), "import", str(path)])
    assert result.exit_code == 1
    failed = [line for line in result.output.splitlines() if line.startswith("failed:")]
    assert failed == [f"failed: {path}:line {len(rows) // 2 + 1}: label export of schema version {SCHEMA_VERSION + 1}"
                      f" (written by a newer release); this release reads schema version {SCHEMA_VERSION}:"
                      " upgrade mast-annotator to import it"]
    assert _counts(db_path) == (0, 0)


def test_an_export_line_of_the_current_schema_imports(tmp_path):
    rows = _export_lines(tmp_path)
    path = tmp_path / "current.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in rows) + b"\n")
    db_path = tmp_path / "target.db"
    result = CliRunner().invoke(main, ["--db", str(db_path), "import", str(path)])
    assert result.exit_code == 0, result.output
    assert _counts(db_path)[1] == len(rows)


def test_a_database_migrated_by_a_newer_release_is_refused_untouched(tmp_path):
    db_path = tmp_path / "newer.db"
    open_db(db_path).close()
    with sqlite3.connect(db_path) as conn:
        conn.execute("INSERT INTO _sqlite_migrations (migration_set, name, applied_at)"
                     " VALUES (?, '999_from_the_future', '2030-01-01')", [MIGRATIONS.name])
    before = db_path.read_bytes()
    last = MIGRATIONS._migrations[-1].name
    for args in (["list"], ["import", str(tmp_path / "nothing.jsonl")], ["report", "-s", "alice"]):
        result = CliRunner().invoke(main, ["--db", str(db_path), *args])
        assert result.exit_code == 1, args
        assert result.output.strip().splitlines() == [
            f"error: {db_path}: migrated by a newer release of mast-annotator (migration 999_from_the_future);"
            f" this release, {__version__}, knows migrations up to {last}: upgrade to open it"]
        assert "Traceback" not in result.output
    assert db_path.read_bytes() == before
