"""The app in real processes: killed mid-session (or mid-write) it loses nothing; two at once
lose no write; a refused write is said and can be made again; a damaged database is one line."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from annotator.importers.importing import import_paths
from annotator.store import labels, open_db, review

HERE = Path(__file__).resolve().parent
MAST = Path(sys.executable).with_name("mast")


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


@contextmanager
def _in_tmux(name: str, command: str) -> Iterator[str]:
    """A tmux session running ``command`` in a 140×42 terminal, killed on the way out."""
    session = f"mast-{name}-{os.getpid()}"
    _tmux("new-session", "-d", "-s", session, "-x", "140", "-y", "42", command)
    try:
        yield session
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def _pane_pid(session: str) -> int:
    return int(_tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())


def _wait_for(session: str, text: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.1)
    raise AssertionError(f"{text!r} never appeared; the screen was:\n{screen}")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_killing_the_app_mid_session_loses_nothing_on_screen(tui_db):
    with _in_tmux("kill", f"exec {MAST} --db {tui_db} annotate --annotator alice") as session:
        _wait_for(session, "Queue of alice")
        _tmux("send-keys", "-t", session, "Enter")
        _wait_for(session, "[REPLAY]")
        for key in ("R", "j", "j", "3", "j", "e", "N"):
            _tmux("send-keys", "-t", session, key)
        _wait_for(session, "Note on FM-2.3")
        _tmux("send-keys", "-t", session, "-l", "keeps drifting")
        _tmux("send-keys", "-t", session, "Enter")
        _wait_for(session, "note on FM-2.3 saved")
        os.kill(_pane_pid(session), signal.SIGKILL)
    db = open_db(tui_db)
    current = {lab.mode_id: lab for lab in labels.current_labels(db, "t1", "alice")}
    assert current["FM-1.3"].onset_step == 2
    assert (current["FM-2.3"].onset_step, current["FM-2.3"].note) == (3, "keeps drifting")


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_the_app_quits_when_its_terminal_hangs_up_without_a_signal(tui_db):
    """Under ``make demo`` the hang-up signal stops at make; here the shell ignores it for the app.
    Quitting so still records the time spent on the trajectory left open."""
    with _in_tmux("hangup", f"trap '' HUP; exec {MAST} --db {tui_db} annotate --annotator alice") as session:
        _wait_for(session, "Queue of alice")
        _tmux("send-keys", "-t", session, "Enter")
        _wait_for(session, "[REPLAY]")
        for key in ("R", "j", "j", "3"):
            _tmux("send-keys", "-t", session, key)
        _wait_for(session, "FM-1.3")
        db = open_db(tui_db)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and review.get_review(db, "t1", "alice").status == "not_started":
            time.sleep(0.1)
        assert review.get_review(db, "t1", "alice").seconds_spent == 0
        pid = _pane_pid(session)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    alive = Path(f"/proc/{pid}").exists()
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the app kept running on a terminal that had hung up"
    assert review.get_review(db, "t1", "alice").seconds_spent > 0, "the open session's time was recorded"


def test_two_annotators_in_two_processes_lose_no_write(tui_db):
    keys = ["R"] + [k for step in range(11) for k in ("1", "q", "a", "j")]
    procs = [
        subprocess.Popen([sys.executable, str(HERE / "drive_app.py"), str(tui_db), name, *keys],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name in ("alice", "carol")
    ]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, out + err
        assert "locked" not in err
    db = open_db(tui_db)
    for name in ("alice", "carol"):
        rows = [r for r in labels.history(db, "t1", name)]
        assert len(rows) == 33, "every toggle of both processes is stored"
        current = {lab.mode_id: lab.onset_step for lab in labels.current_labels(db, "t1", name)}
        assert current == {"FM-1.1": 10, "FM-2.1": 10, "FM-3.1": 10}


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_annotate_imports_the_paths_given_then_opens_on_them(tmp_path):
    samples = HERE.parents[1] / "trajectories"
    reference = open_db(tmp_path / "reference.db")
    expected = import_paths(reference, [samples]).total("imported")
    with _in_tmux("import", f"exec {MAST} --db {tmp_path / 'fresh.db'} annotate {samples} --annotator alice") as session:
        _wait_for(session, f"Queue of alice   0/{expected} done")
    assert expected >= 10


# ---- database trouble in the app: a write refused, a write cut short, a file that cannot be read


@contextmanager
def _write_lock(db_path: Path) -> Iterator[sqlite3.Connection]:
    """Another process's write transaction on the database, held until the block ends."""
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield other
    finally:
        other.rollback()
        other.close()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_killing_the_app_mid_write_keeps_every_confirmed_tag(tui_db):
    """Killed while a tag waits for the write lock: the tags it confirmed are there, the one it
    had not confirmed is not there at all, and the database is whole."""
    with _in_tmux("midwrite", f"exec {MAST} --db {tui_db} annotate --annotator alice") as session:
        _wait_for(session, "Queue of alice")
        _tmux("send-keys", "-t", session, "Enter")
        _wait_for(session, "[REPLAY]")
        _tmux("send-keys", "-t", session, "R")
        _tmux("send-keys", "-t", session, "1")
        _wait_for(session, "tagged FM-1.1 at step 0")
        with _write_lock(tui_db):
            _tmux("send-keys", "-t", session, "j")
            _tmux("send-keys", "-t", session, "2")  # waits for the lock, inside its transaction
            time.sleep(1.0)
            os.kill(_pane_pid(session), signal.SIGKILL)
    db = open_db(tui_db)
    current = {lab.mode_id: lab.onset_step for lab in labels.current_labels(db, "t1", "alice")}
    assert current == {"FM-1.1": 0}
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_a_refused_write_is_said_in_place_and_can_be_made_again(tui_db, monkeypatch, read_screen):
    """Another process holds the write lock past the (shortened) busy timeout: the tag and a
    typed note are refused, the screen says NOT SAVED, and ctrl+r makes each once the lock is gone."""
    from annotator.store import db as store_db
    from annotator.tui.app import make_app

    screen_text = read_screen
    monkeypatch.setattr(store_db, "BUSY_TIMEOUT_S", 0.3)
    app = make_app(tui_db, "alice")
    async with app.run_test(size=(140, 42)) as pilot:
        await pilot.press("enter", "R", "j", "j")
        with _write_lock(tui_db):
            await pilot.press("1")
            await pilot.pause()
            text = screen_text(app)
            assert "NOT SAVED" in text and "locked by another process" in text and "ctrl+r" in text
        assert labels.current_labels(app.db, "t1", "alice") == []
        await pilot.press("j", "ctrl+r")
        await pilot.pause()
        assert "saved on retry" in screen_text(app)
        current = {lab.mode_id: lab for lab in labels.current_labels(app.db, "t1", "alice")}
        assert current["FM-1.1"].onset_step == 2, "retried at the step it was made at"
        await pilot.press("N")
        await pilot.press(*"loops back")
        with _write_lock(tui_db):
            await pilot.press("enter")
            await pilot.pause()
            assert "NOT SAVED" in screen_text(app)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert labels.current_labels(app.db, "t1", "alice")[0].note == "loops back", "the typed note was kept"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "nothing to try again" in screen_text(app)


@pytest.mark.skipif(shutil.which("tmux") is None or shutil.which("setpriv") is None,
                    reason="tmux and setpriv are installed by .ci/run")
def test_a_read_only_database_is_read_and_its_refusals_said(tui_db):
    from tests.db_trouble import make_read_only, settle, shared_folder

    folder = shared_folder()
    db_path = folder / "mast.db"
    settle(tui_db)
    shutil.copy(tui_db, db_path)
    prefix = " ".join(make_read_only(db_path))
    with _in_tmux("readonly", f"{prefix} {MAST} --db {db_path} annotate --annotator alice; echo EXIT=$?; sleep 30"
                  ) as session:
        _wait_for(session, "Queue of alice")
        _tmux("send-keys", "-t", session, "Enter")
        _wait_for(session, "[REPLAY]")
        _tmux("send-keys", "-t", session, "1")
        screen = _wait_for(session, "NOT SAVED")
        assert "read-only" in screen and "Traceback" not in screen
        _tmux("send-keys", "-t", session, "R")
        _wait_for(session, "review mode: every step is listed")  # still usable for reading
        _tmux("send-keys", "-t", session, "Escape")
        _wait_for(session, "Queue of alice")
        _tmux("send-keys", "-t", session, "C-q")
        _wait_for(session, "EXIT=0")
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_a_damaged_database_stops_the_app_with_one_line(tui_db):
    from tests.db_trouble import damage_text

    db_path = tui_db
    damage_text(db_path, b"Write a function")  # every trajectory's task, which the queue lists
    with _in_tmux("damaged", f"{MAST} --db {db_path} annotate --annotator alice; echo EXIT=$?; sleep 30") as session:
        screen = _wait_for(session, "EXIT=")
    assert "EXIT=2" in screen or "EXIT=1" in screen
    assert "damaged" in screen and str(db_path) in screen.replace("\n", "")
    assert "Traceback" not in screen and "╭" not in screen


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)")
def test_a_trajectory_whose_steps_went_missing_stops_the_app_with_one_line(tui_db):
    """Steps the queue lists but the store no longer has (another process changed the
    trajectory under the app) stop it with the one line the command line prints, not a
    traceback."""
    db = sqlite3.connect(tui_db)
    with db:
        for table in ("step_heads", "steps"):
            db.execute(f"DELETE FROM {table}")
    db.close()
    with _in_tmux("missing", f"{MAST} --db {tui_db} annotate --annotator alice; echo EXIT=$?; sleep 30") as session:
        _wait_for(session, "Queue of alice")
        _tmux("send-keys", "-t", session, "Enter")
        screen = _wait_for(session, "EXIT=")
    assert "EXIT=1" in screen and "error: trajectory 't1' has no step 0" in screen
    assert "Traceback" not in screen and "╭" not in screen
