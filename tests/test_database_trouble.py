"""Database trouble is one line naming the file and what to do, and a non-zero exit.

The cases an attack found ending in raw tracebacks (or, for ``import`` on a damaged file, in
exit code 0): a read-only database, damaged pages, a full disk. Each command runs in its own
process against a database really in that state (see ``tests/db_trouble.py``).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest

from tests.db_trouble import (
    damage_page,
    damage_text,
    file_size_limit,
    make_read_only,
    mast,
    settle,
    shared_folder,
    small_filesystem,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "trajectories"
MARKER = b"TASK-TO-DAMAGE-" * 4


def one_line_error(result, *words: str) -> str:
    """The command failed with exactly one line on stderr that says ``words``, and no traceback."""
    assert result.returncode != 0, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr and "sqlite3." not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def folder():
    path = shared_folder()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def filled(folder) -> Path:
    """A database with the samples and one trajectory whose task carries a marker to damage."""
    db = folder / "mast.db"
    extra = folder / "marked.json"
    extra.write_bytes(orjson.dumps({"messages": [  # the first message is the task
        {"role": "user", "content": MARKER.decode()}, {"role": "assistant", "content": "done"}]}))
    for path in (SAMPLES, extra):
        result = mast("--db", str(db), "import", "-q", str(path))
        assert result.returncode == 0, result.stderr
    settle(db)
    return db


def _new_file(folder: Path, name: str = "new.jsonl", size: int = 1) -> Path:
    path = folder / name
    text = " ".join(["a step that is long enough to fill pages"] * 30)
    path.write_bytes(b"".join(orjson.dumps({"id": f"{name}-{i}", "messages": [
        {"role": "user", "content": f"{i} {text}"}, {"role": "assistant", "content": text}]}) + b"\n"
        for i in range(size)))
    return path


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is not installed")
def test_read_only_database(filled, folder):
    prefix = make_read_only(filled)
    new = _new_file(folder)
    one_line_error(mast("--db", str(filled), "import", str(new), prefix=prefix), str(filled), "read-only")
    one_line_error(mast("--db", str(filled), "prelabel", "--labeller", "rules", "-q", prefix=prefix),
                   str(filled), "read-only")
    listed = mast("--db", str(filled), "list", prefix=prefix)
    assert listed.returncode == 0 and "14 trajectories" in listed.stdout, "reading needs no write"


def test_damaged_text(filled):
    conn = sqlite3.connect(filled)
    marked = conn.execute("SELECT id FROM trajectories WHERE task = ?", [MARKER.decode()]).fetchone()[0]
    conn.close()
    damage_text(filled, MARKER)
    for args in (["list"], ["show", marked], ["prelabel", "--labeller", "rules", "-q"]):
        line = one_line_error(mast("--db", str(filled), *args), str(filled), "damaged")
        assert "restore it from a backup" in line


def test_damaged_index_fails_the_import(filled, folder):
    damage_page(filled, "sqlite_autoindex_trajectories_1")
    result = mast("--db", str(filled), "import", str(_new_file(folder)))
    one_line_error(result, str(filled), "damaged")


def test_full_disk(filled, folder):
    big = _new_file(folder, "big.jsonl", size=400)
    room = 64 * 1024
    with small_filesystem(filled.stat().st_size + room) as small:
        if small is not None:  # a real full file system
            db, preexec, said = small / "mast.db", None, "disk is full"
            shutil.copy(filled, db)
        else:  # a file that may not grow: the same refusal, reported by SQLite as an I/O error
            db, preexec, said = filled, file_size_limit(filled.stat().st_size + room), "disk"
        for args in (["import", str(big)], ["prelabel", "--labeller", "rules", "-q"]):
            line = one_line_error(mast("--db", str(db), *args, preexec=preexec), str(db), said)
            assert "nothing was written" in line
        listed = mast("--db", str(db), "list", "--json")
        assert listed.returncode == 0, listed.stderr
        titles = {orjson.loads(line)["title"] for line in listed.stdout.splitlines()}
        assert len(titles) == 14 and "big" not in titles, "nothing of the file remains"
