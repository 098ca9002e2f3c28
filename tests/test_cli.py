"""The CLI end to end with click's CliRunner: import, list, show, taxonomy, formats."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from annotator.cli import main
from annotator.importers.registry import registry

ROOT = Path(__file__).resolve().parents[1]
WW = ROOT / "trajectories" / "who_and_when"


@pytest.fixture
def run(tmp_path):
    db = tmp_path / "cli.db"

    def invoke(*args: str):
        return CliRunner().invoke(main, ["--db", str(db), *args], env={"COLUMNS": "100"})

    return invoke


def _ids(run, *args):
    result = run("list", "--json", *args)
    assert result.exit_code == 0, result.output
    return [orjson.loads(line) for line in result.stdout.splitlines()]


def test_import_summary_and_reimport(run):
    first = run("import", str(ROOT / "trajectories"))
    assert first.exit_code == 0, first.output
    assert "11 file(s): 13 imported, 0 updated, 0 unchanged, 159 labels, 0 failed, 1 skipped" in first.stdout
    assert "SOURCES.md: not a trajectory" in first.stdout
    assert "who_and_when" in first.stdout and "warning (label): record 1: code 2.1" in first.stdout
    again = run("import", "-q", str(ROOT / "trajectories"))
    assert again.exit_code == 0
    assert again.stdout.strip() == ("11 file(s): 0 imported, 0 updated, 13 unchanged, 0 labels, 0 failed,"
                                    " 1 skipped (not a trajectory)")


def test_import_glob_overrides_and_forced_format(run, tmp_path):
    result = run("import", "-q", str(WW / "Hand-*.json"), "--system", "M1", "--model", "gpt-4o",
                 "--benchmark", "GAIA-dev")
    assert result.exit_code == 0 and "3 file(s): 3 imported" in result.stdout
    rows = _ids(run)
    assert {(r["system"], r["model"], r["benchmark"]) for r in rows} == {("M1", "gpt-4o", "GAIA-dev")}
    log = tmp_path / "run.txt"
    log.write_text("one\n\ntwo\n")
    forced = run("import", "--format", "text_log", str(log))
    assert forced.exit_code == 0 and "text_log" in forced.stdout
    assert run("import", str(tmp_path / "nothing-*.json")).exit_code == 1


def test_import_failure_exit_code_and_message(run, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"steps": ["a"]}\n{"steps": ["b"]}\n{oops}\n')
    result = run("import", str(bad))
    assert result.exit_code == 1
    assert f"failed: {bad}:line 3: malformed JSON line" in result.stderr
    skipped = run("import", "--skip-bad-lines", str(bad))
    assert skipped.exit_code == 0 and "1 bad line(s) skipped: 3" in skipped.stdout
    big = run("import", "--max-size", "5", str(WW / "Hand-Crafted_1.json"))
    assert big.exit_code == 1 and "over the import limit of 5 bytes" in big.stderr


def test_list_filters_table_and_json(run):
    run("import", "-q", str(ROOT / "trajectories"))
    table = run("list", "--system", "Magentic-One")
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["id", "system", "model", "benchmark", "outcome", "steps", "title"]
    assert lines[-1] == "3 trajectories"
    assert all(len(line) <= 100 for line in lines)
    assert "Magentic-One" in lines[1] and "failure" in lines[1] and "Hand-Crafted_" in lines[1]
    rows = _ids(run, "--outcome", "success")
    assert [(r["system"], r["n_steps"]) for r in rows] == [("AG2", 10)]
    assert "metadata" not in rows[0] and "task" not in rows[0]  # hidden fields never listed
    assert [r["title"] for r in _ids(run, "--search", "mathproxyagent")] == []
    assert len(_ids(run, "--format", "mad_human")) == 4
    assert len(_ids(run, "--status", "not_started", "--annotator", "alice")) == 13
    assert _ids(run, "--status", "done", "--annotator", "alice") == []


def test_list_cuts_nothing_at_100_columns(run, tmp_path):
    """A title longer than its column, a URL and a word longer than any column, and a system
    name wider than its column all wrap inside their columns: read back column by column, each
    holds its full text, markup printed as the characters it is."""
    import sqlite3

    run("import", "-q", str(WW / "Hand-Crafted_4.json"))
    title = ("[bold]FAILED[/bold] deploy after three retries, see https://example.com/a/very/long/path/"
             + "x" * 60 + " and " + "Supercalifragilistic" * 4)
    system = "Magentic-One-Orchestrator-v2"
    with sqlite3.connect(tmp_path / "cli.db") as conn:
        conn.execute("UPDATE trajectories SET title = ?, system = ?", [title, system])
    lines = run("list").stdout.splitlines()
    assert all(len(line) <= 100 for line in lines) and "…" not in "".join(lines)
    header, body = lines[0], lines[1:-1]
    starts = [header.index(name) for name in ("id", "system", "model", "benchmark", "outcome", "steps", "title")]
    ends = [*starts[1:], max(map(len, lines))]
    column = ["".join("".join(line[a:b] for line in body).split()) for a, b in zip(starts, ends, strict=True)]
    assert column[1] == system and column[-1] == "".join(title.split())


def test_show_header_steps_limit_and_step(run):
    run("import", "-q", str(WW / "Hand-Crafted_4.json"))
    [row] = _ids(run)
    full = run("show", row["id"][:6])
    assert full.exit_code == 0
    assert f"       id: {row['id']}" in full.stdout and "    steps: 17" in full.stdout
    assert full.stdout.count("\n── #") == 17
    limited = run("show", row["id"], "--limit", "3")
    assert limited.stdout.count("── #") == 3
    one = run("show", row["id"], "--step", "8")
    assert one.stdout.startswith("── #8 WebSurfer · message")
    assert run("show", row["id"], "--step", "99").exit_code == 1
    missing = run("show", "zzzz")
    assert missing.exit_code == 1 and "no trajectory with id 'zzzz'" in missing.stderr
    raw = run("show", row["id"], "--raw")
    assert orjson.loads(raw.stdout)["mistake_step"] == "8"


def test_show_prints_escape_sequences_inert(run, tmp_path):
    hostile = "\x1b[2J\x1b]0;pwned\x07[bold red]markup[/] \x9b31m"
    path = tmp_path / "evil.json"
    path.write_bytes(orjson.dumps([{"role": "user", "content": hostile}, {"role": "assistant", "content": "ok"}]))
    run("import", "-q", str(path))
    [row] = _ids(run)
    shown = run("show", row["id"]).stdout + run("show", row["id"], "--step", "0").stdout
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "\\x1b[2J\\x1b]0;pwned\\x07[bold red]markup[/] \\x9b31m" in shown


def test_taxonomy_print_json_and_validate(run, tmp_path):
    printed = run("taxonomy")
    assert printed.exit_code == 0
    assert "FM-3.2" in printed.stdout and "[s]" in printed.stdout
    data = orjson.loads(run("taxonomy", "--json").stdout)
    assert len(data["modes"]) == 14 and len(data["version_hash"]) == 12
    ok = run("taxonomy", "validate", str(ROOT / "taxonomy" / "mast.yaml"))
    assert ok.exit_code == 0 and ok.stdout.startswith("ok: MAST (paper-v3): 3 categories, 14 modes")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nversion: '1'\ncategories: [{id: C, name: c}]\n"
                   "modes: [{id: M, name: m, category: D, definition: d, hotkey: '1'}]\n")
    failed = run("taxonomy", "validate", str(bad))
    assert failed.exit_code == 1 and "mode M: unknown category 'D'" in failed.stderr


def test_formats_lists_every_importer(run):
    result = run("formats")
    assert result.exit_code == 0
    for name in registry():
        assert name in result.stdout


@pytest.mark.parametrize("command", ["import", "list", "show", "taxonomy", "formats"])
def test_help_has_examples(run, command):
    result = run(command, "--help")
    assert result.exit_code == 0
    if command != "formats":
        assert "Examples:" in result.stdout


def test_formats_taxonomy_validate_and_list_filters_explain_themselves():
    for args in (["formats", "--help"], ["taxonomy", "validate", "--help"]):
        assert "Examples:" in CliRunner().invoke(main, args).output
    listing = CliRunner().invoke(main, ["list", "--help"], env={"COLUMNS": "100"}).output
    for flag in ("--system", "--model", "--benchmark", "--outcome", "--tag"):
        lines = listing.splitlines()
        at = next(i for i, x in enumerate(lines) if x.strip().startswith(flag))
        assert "Only" in " ".join(lines[at : at + 2]), lines[at]
