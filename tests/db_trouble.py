"""Databases in trouble, made for real: a read-only file, damaged pages, a full disk.

Tests run as root in CI, and root ignores file modes, so a read-only database is read by a
process that really cannot write it: the command runs as an unprivileged user (``setpriv``)
when the tests run as root, or the file is made read-only when they do not. A full disk is a
small tmpfs holding the database when the tests may mount one (SQLite then reports "database
or disk is full"), else a file-size limit on the command's process (RLIMIT_FSIZE: writes
beyond it fail, which SQLite reports as a disk I/O error). Damage is written into the
file's bytes: a text value made invalid UTF-8, or an index page overwritten.
"""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MAST = Path(sys.executable).with_name("mast")
NOBODY = 65534


def shared_folder() -> Path:
    """A fresh folder every user may write in (pytest's own tmp folders are root's alone), so
    an unprivileged reader can create the database's -wal and -shm files beside it."""
    folder = Path(tempfile.mkdtemp(prefix="mast-trouble-", dir="/tmp"))
    folder.chmod(0o777)
    return folder


def settle(db_path: Path) -> None:
    """Fold the WAL into the main file and remove it, so the file's bytes are the whole database."""
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def make_read_only(db_path: Path) -> list[str]:
    """Make ``db_path`` unwritable for the commands run with the returned prefix."""
    settle(db_path)
    if os.geteuid() == 0:
        db_path.chmod(0o644)  # root's file: the unprivileged user reads it and cannot write it
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    db_path.chmod(0o444)
    return []


def damage_text(db_path: Path, marker: bytes) -> None:
    """Overwrite every stored copy of ``marker`` with bytes that are not UTF-8."""
    settle(db_path)
    data = bytearray(db_path.read_bytes())
    at = data.find(marker)
    assert at >= 0, "the marker is in the file"
    while at >= 0:
        data[at:at + len(marker)] = b"\xff" * len(marker)
        at = data.find(marker, at + len(marker))
    db_path.write_bytes(bytes(data))


def damage_page(db_path: Path, index: str) -> None:
    """Overwrite the root page of ``index`` with garbage: every lookup through it fails."""
    settle(db_path)
    conn = sqlite3.connect(db_path)
    page = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", [index]).fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with db_path.open("r+b") as fh:
        fh.seek((page - 1) * size)
        fh.write(b"\x0d\xff\xff\xff" * (size // 4))


@contextmanager
def small_filesystem(size: int) -> Iterator[Path | None]:
    """A tmpfs of ``size`` bytes mounted for the test (root only), or None where mounting is not
    allowed; callers then fall back to :func:`file_size_limit`."""
    folder = Path(tempfile.mkdtemp(prefix="mast-full-", dir="/tmp"))
    mounted = os.geteuid() == 0 and shutil.which("mount") is not None and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True).returncode == 0
    try:
        yield folder if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def file_size_limit(limit: int):
    """A ``preexec_fn`` capping the size of any file the child writes (a disk that is full)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def mast(*args: str, prefix: list[str] | None = None, preexec=None, cwd: Path | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the ``mast`` command in its own process, as it is run by a person."""
    env = {**os.environ, "COLUMNS": "200", "MAST_ANNOTATOR": "alice"}
    return subprocess.run([*(prefix or []), str(MAST), *args], capture_output=True, text=True, env=env,
                          preexec_fn=preexec, cwd=cwd, timeout=timeout)
