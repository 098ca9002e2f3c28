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
    """The database cannot be opened, migrated or written."""


class NotFound(AnnotatorError):
    """A trajectory, run or annotator that does not exist."""


class LabellingError(AnnotatorError):
    """A pre-labelling run cannot proceed (bad settings, unreachable endpoint, budget)."""


class ReportError(AnnotatorError):
    """A report or agreement cannot be computed from the selected labels."""
