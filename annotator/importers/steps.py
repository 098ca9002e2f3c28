"""Building blocks for the agent-log importers: a step list that numbers itself and counts
unknown events, timestamp parsing for the shapes logs use, and JSON helpers.

Agent tools keep adding event types; an importer never drops one it does not know. It becomes
a generic ``event`` step and is counted, and the count reaches the user as a warning, so a
format change is visible instead of silently thinning the trajectory.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import orjson

from annotator.errors import ImportFailure
from annotator.importers.accounting import Ledger
from annotator.models import Step


#: Step fields that hold text; a source value of another type is shown as its text.
_TEXT_FIELDS = ("id", "agent", "role", "recipient", "tool_name", "tool_args", "call_id", "group")


class StepList:
    """Steps in replay order, numbered as they are added.

    Values come from files written by other tools; a scalar of the wrong type in a text field
    (a numeric role, a boolean tool name) is kept as its text rather than failing the file.
    """

    def __init__(self, ledger: Ledger | None = None) -> None:
        self.steps: list[Step] = []
        #: Where unknown events are warned about; the importer hands it to its ImportedRecord.
        self.ledger = ledger or Ledger()

    def add(self, **fields) -> Step:
        for key in _TEXT_FIELDS:
            if key in fields:
                fields[key] = str_or_none(fields[key])
        fields["id"] = fields.get("id") or ""
        step = Step(index=len(self.steps), **fields)
        self.steps.append(step)
        return step

    def unknown_event(self, type_name: str, raw: object, **fields) -> Step:
        """Keep an item of a type the importer does not know as a generic, counted step."""
        self.ledger.warn("unknown_kind", f"unknown event of type {type_name!r} kept as a generic step")
        fields.setdefault("content", f"[{type_name}] " + compact(raw))
        return self.add(kind="event", raw=raw, attributes={"unknown_type": type_name}, **fields)

    def require(self, path: object, what: str) -> list[Step]:
        """The steps, or an ImportFailure when the file held none but unknown events (an empty
        or foreign record)."""
        if all("unknown_type" in s.attributes for s in self.steps):
            raise ImportFailure(str(path), f"nothing to import: no {what} found")
        return self.steps


def str_or_none(value: object) -> str | None:
    """A source value as text: strings as they are, other scalars printed, containers None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    return None


def obj(value: object) -> dict:
    """``value`` if it is a JSON object, else an empty one: a wrong shape reads as absent."""
    return value if isinstance(value, dict) else {}


def seq(value: object) -> list:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def fingerprint(data: bytes) -> str:
    """Identity of a finished run log: its content. Runs of the same task by different models
    get different ids, and a moved or renamed file keeps its id."""
    return hashlib.sha256(data).hexdigest()


def compact(value: object, limit: int = 2000) -> str:
    """One-line JSON of a value, cut to ``limit`` characters, for generic step text."""
    text = value if isinstance(value, str) else orjson.dumps(value, default=str).decode()
    return text if len(text) <= limit else text[:limit] + "…"


def json_text(value: object) -> str | None:
    """Tool arguments as text: strings as they are, anything else as JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()


def parse_json_maybe(value: object) -> object:
    """A JSON-encoded string decoded, anything else (or undecodable text) as it is."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def as_int(value: object) -> int | None:
    """An integer from an int, float or numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value))
        except ValueError:
            return None
    return None


def parse_time(value: object) -> datetime | None:
    """A UTC datetime from an ISO string, epoch seconds or epoch nanoseconds; None if unreadable."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str) and not value.strip().lstrip("-").replace(".", "", 1).isdigit():
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if number > 1e14:  # nanoseconds
        number /= 1e9
    elif number > 1e11:  # milliseconds
        number /= 1e3
    try:
        return datetime.fromtimestamp(number, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def plain(value: object) -> object:
    """A JSON-safe deep copy of a parsed value, for ``Step.raw``."""
    return orjson.loads(orjson.dumps(value, default=str))
