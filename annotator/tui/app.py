"""The annotation app and its factory, ``make_app``, which the CLI, the tests and the benchmark use."""

from __future__ import annotations

import errno
import os
import sqlite3
import sys
import termios
from contextlib import suppress
from pathlib import Path

from textual.app import App
from textual.binding import Binding
from textual.screen import ModalScreen

from annotator.annotating import queue as work
from annotator.annotating.session import AnnotationSession
from annotator.errors import AnnotatorError, StoreError, database_trouble
from annotator.settings import Settings
from annotator.store import data_version, open_db
from annotator.taxonomy import Taxonomy, load_taxonomy
from annotator.text import inert
from annotator.tui.keys import check_hotkeys
from annotator.tui.screens.queue import QueueScreen
from annotator.tui.screens.replay import ReplayScreen

#: Seconds between two looks at whether another process (a second annotator, a pre-labelling
#: run) committed to the database; a look is one pragma, so an idle app costs nothing more.
POLL_S = 1.0


class AnnotatorApp(App[None]):
    """Queue → replay → (compare, help, modals), for one annotator on one database.

    What other processes write shows up on its own: a timer compares the store's data version
    and, when it moved, the screens in view redraw what they read from the database.

    Database trouble (a damaged page, a file that turned read-only) never ends in a traceback: a
    write the database refuses is said in place by the screen that made it (and can be retried
    there); a trajectory that cannot be read is said on the queue, which stays usable; any
    other read that fails, or finds missing what the app was shown (a step of a trajectory that
    another process changed under it), stops the app, and ``store_trouble`` holds the one line
    the command line then prints, with a non-zero exit.
    """

    CSS_PATH = "app.tcss"
    TITLE = "mast annotate"
    #: Quitting is in every footer: nothing is lost by it, every action is already saved.
    BINDINGS = [Binding("ctrl+q", "quit", "quit", key_display="^q", priority=True)]

    def __init__(
        self, db_path: str | Path, annotator: str, *, blind: bool, taxonomy: Taxonomy,
        adjudicate: tuple[str, str] | None = None, tag: str | None = None,
    ) -> None:
        super().__init__()
        self.adjudicate = adjudicate
        """Two people whose disagreements this session decides: the queue lists only those
        trajectories and compare opens on the two."""
        check_hotkeys(taxonomy)
        self.db_path = db_path
        self.db = open_db(db_path)
        self.store_trouble: str | None = None
        self.annotator = annotator
        self.blind = blind
        self.tag = tag
        """Only trajectories with this tag (an audit sample's) are queued."""
        self.taxonomy = taxonomy
        self.queue_ids: list[str] = []
        self.last_opened: str | None = None
        """The trajectory opened last, where the queue puts its cursor when shown again."""
        self.replay_positions: dict[str, tuple[bool, int]] = {}
        """Per trajectory left in this run of the app: (review mode?, furthest step revealed)."""
        self._sessions: dict[str, AnnotationSession] = {}
        self._store_version = data_version(self.db)

    def _handle_exception(self, error: Exception) -> None:
        if not isinstance(error, (sqlite3.DatabaseError, AnnotatorError)):
            super()._handle_exception(error)
            return
        if self.store_trouble is None:
            self.store_trouble = str(error) if isinstance(error, AnnotatorError) else database_trouble(self.db_path, error)
        self.exit(return_code=2)

    def on_mount(self) -> None:
        self.push_screen(QueueScreen())
        self.set_interval(POLL_S, self._tick)

    def _tick(self) -> None:
        """Once a second: quit if the terminal hung up (a real terminal only), else look at the store."""
        if not self.is_headless:
            self.exit_if_terminal_gone()
        self.poll_store()

    def exit_if_terminal_gone(self) -> None:
        """Quit once the terminal has hung up (its window closed, an ssh link dropped).

        The hang-up signal does not always reach the app: ``make demo``'s make takes it and
        waits for its child, and the input thread then reads end-of-file from the dead terminal
        in a loop, a core spinning for nothing. Every action is already in the database and the
        open sessions record their time spent before the exit, so quitting loses nothing; and it
        is immediate, because Textual's orderly shutdown (and its unmount) would wait forever to
        write the terminal-restoring sequences to a terminal that is gone.
        """
        try:
            termios.tcgetattr(sys.__stdin__.fileno())
        except termios.error as exc:
            if exc.args and exc.args[0] == errno.EIO:
                self._close_store()
                os._exit(0)

    def poll_store(self) -> None:
        """Redraw the screens in view from the database when another connection committed.

        Only the top screen and, under modals, the screen they cover are in view; a queue
        hidden under a replay screen reloads anyway when it is shown again, and a screen not
        mounted yet reads the database as it mounts.
        """
        version = data_version(self.db)
        if version == self._store_version:
            return
        self._store_version = version
        for screen in reversed(self.screen_stack):
            if isinstance(screen, (QueueScreen, ReplayScreen)) and screen.is_mounted:
                screen.show_store_changes()
            if not isinstance(screen, ModalScreen):
                break

    def session(self, trajectory_id: str) -> AnnotationSession:
        """The annotation session of a trajectory; kept, so undo still works after coming back.

        It is blind when the app is, and on an overlap item (assigned to someone else too),
        where agreement is measured: the review then records that it was made blind, and the
        screen opened on it shows what the session says.
        """
        if trajectory_id not in self._sessions:
            blind = self.blind or trajectory_id in work.blind_items(self.db, self.annotator, [trajectory_id])
            self._sessions[trajectory_id] = AnnotationSession(
                self.db, trajectory_id, self.annotator, self.taxonomy, blind=blind
            )
        return self._sessions[trajectory_id]

    def open_trajectory(self, trajectory_id: str) -> ReplayScreen | None:
        try:
            screen = self._replay_screen(trajectory_id)
        except sqlite3.DatabaseError as exc:  # this trajectory's pages are damaged; others may read
            message = inert(database_trouble(self.db_path, exc))
            self.notify(message, title="cannot open this trajectory", severity="error", timeout=30, markup=False)
            return None
        self.push_screen(screen)
        return screen

    def step_trajectory(self, current: str, delta: int) -> None:
        """Replace the replay screen by the next (or previous) trajectory of the queue."""
        if current not in self.queue_ids:
            return
        position = self.queue_ids.index(current) + delta
        if not 0 <= position < len(self.queue_ids):
            self.notify("no more trajectories in the queue")
            return
        self.session(current).close()
        self.switch_screen(self._replay_screen(self.queue_ids[position]))

    def _replay_screen(self, trajectory_id: str) -> ReplayScreen:
        """A replay screen of the trajectory, at the position it was left; the queue follows it."""
        self.last_opened = trajectory_id
        session = self.session(trajectory_id)
        return ReplayScreen(session, blind=session.blind, position=self.replay_positions.get(trajectory_id))

    def on_unmount(self) -> None:
        self._close_store()

    def _close_store(self) -> None:
        """Record the open sessions' time spent, then close the database. A database that refuses
        writes by now (read-only, full) keeps every label already saved; only the time spent
        since the last write goes unrecorded, rather than the exit ending in a traceback."""
        with suppress(StoreError):
            for session in self._sessions.values():
                session.close()
        self.db.close()


def make_app(
    db_path: str | Path,
    annotator: str | None = None,
    *,
    blind: bool = False,
    taxonomy: Taxonomy | None = None,
    adjudicate: tuple[str, str] | None = None,
    tag: str | None = None,
) -> AnnotatorApp:
    """Build the app on ``db_path`` (migrated on open) for ``annotator`` (default: the settings'
    annotator, ``MAST_ANNOTATOR`` or the OS user, when the app is started without the CLI)."""
    return AnnotatorApp(
        db_path, annotator or Settings().annotator_name(), blind=blind, taxonomy=taxonomy or load_taxonomy(),
        adjudicate=adjudicate,
        tag=tag,
    )
