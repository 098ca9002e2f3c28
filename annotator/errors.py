"""Typed errors of the core. Front ends render them as one line; nothing else is caught broadly."""

from __future__ import annotations


class AnnotatorError(Exception):
    """Base class: an expected failure with a message fit to show a user as it is."""


class ImportFailure(AnnotatorError):
    """A file (or one record or line of it) that cannot be imported.

    ``path`` names the file, ``where`` the line or record when known, ``reason`` says why.
    """

    def __init__(self, path: str, reason: str, where: str | None = None):
        self.path = str(path)
        self.reason = reason
        self.where = where
        location = f"{self.path}:{where}" if where else self.path
        super().__init__(f"{location}: {reason}")


class UnknownFormat(ImportFailure):
    """No importer recognises the file."""


class AmbiguousFormat(ImportFailure):
    """More than one importer claims the file; the user must choose with --format."""

    def __init__(self, path: str, candidates: list[str]):
        self.candidates = candidates
        super().__init__(
            path,
            f"ambiguous format, could be any of: {', '.join(candidates)}; choose one with --format",
        )


class StoreError(AnnotatorError):
    """The database cannot be opened, migrated or written.

    ``reason`` is the message without the file's name, for a front end that shows it beside
    the database it has open (the message names the file for everyone else).
    """

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


class NotFound(AnnotatorError):
    """A trajectory, run or annotator that does not exist."""


class LabellingError(AnnotatorError):
    """A pre-labelling run cannot proceed (bad settings, unreachable endpoint, budget)."""


class RunInterrupted(AnnotatorError):
    """A pre-labelling run stopped midway through no fault of what it labels (a worker process
    killed): the run is recorded as interrupted, like one stopped by a signal, and resumes.

    Not a ``LabellingError``: that fails one trajectory and the run goes on; this ends the run.
    """


class ReportError(AnnotatorError):
    """A report or agreement cannot be computed from the selected labels."""


#: What to tell the user for each kind of database trouble, by a fragment of SQLite's message.
_ADVICE = (
    ("readonly", "the database is read-only, nothing was written: make it writable or use a copy"),
    ("disk is full", "the disk is full, nothing was written: free some space and try again"),
    ("could not decode", "the database is damaged (text that is not UTF-8): restore it from a backup"
                         " or rebuild it with `sqlite3 FILE .recover`"),
    ("malformed", "the database is damaged: restore it from a backup or rebuild it with `sqlite3 FILE .recover`"),
    ("not a database", "cannot open database: the file is not an SQLite database, or is damaged beyond reading"),
    ("disk i/o error", "the disk failed to read or write, nothing was written: check the disk and its free space"),
    ("unable to open", "the database file cannot be opened: check that it and its folder are readable and writable"),
    ("locked", "another process kept the database locked, nothing was written: try again"),
)


def database_trouble(path: object, exc: BaseException) -> str:
    """One line naming the database file, what went wrong and what to do about it, for an error
    of SQLite itself (read-only file, full disk, damaged pages); front ends show it as it is."""
    return f"{path}: {trouble_reason(exc)}" if path else trouble_reason(exc)


def first_line(exc: BaseException) -> str:
    """An exception's message as one line: its first, or the exception's name when it has none."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def trouble_reason(exc: BaseException) -> str:
    """What went wrong with the database and what to do, with SQLite's own words in brackets."""
    message = first_line(exc)
    for fragment, advice in _ADVICE:
        if fragment in message.lower():
            return f"{advice} ({message})"
    return f"database error: {message}"
