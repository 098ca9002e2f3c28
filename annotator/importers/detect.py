"""Sniffing: the bounded look at a file that importers decide on (the choice is the registry's).

A large file is never loaded to detect it: :class:`Head` holds at most the first
``HEAD_BYTES`` of text, the keys and first scalar values seen by an incremental JSON parse of
at most ``PARSE_BYTES``, the first JSONL lines and a zip's member names.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import ijson
import orjson

from annotator.errors import ImportFailure, UnknownFormat
from annotator.importers.base import ImportOptions

HEAD_BYTES = 64 * 1024
PARSE_BYTES = 512 * 1024
JSONL_LINES = 50
#: JSON nested deeper than this is refused: no trajectory nests so deep, and an incremental parse
#: of it costs memory in the square of the depth (10^5 levels, 200 KB, would take gigabytes).
MAX_NESTING = 1000
#: A zip archive that inflates more than ``ZIP_RATIO`` times its size, to over ``ZIP_FLOOR``
#: bytes, is refused from its directory before anything is inflated (JSON logs inflate 5-20x).
ZIP_RATIO = 100
ZIP_FLOOR = 64 * 1024 * 1024
#: The longest first line read to tell JSON Lines from a JSON document.
FIRST_LINE_BYTES = 64 * 1024 * 1024
ATTRIBUTE_KEYS = 2000
_MAX_DEPTH = 4


@dataclass
class Head:
    """A bounded look at a file: what sniffers decide on."""

    path: Path
    size: int
    kind: str  # "zip" | "json" | "jsonl" | "text"
    text: str = ""
    keys_at: dict[str, set[str]] = field(default_factory=dict)
    scalars: dict[str, object] = field(default_factory=dict)
    root: str | None = None  # "object" | "array" for JSON
    lines: list[object] = field(default_factory=list)
    zip_members: list[str] = field(default_factory=list)
    #: Span attribute names seen at any depth: keys of ``attributes`` maps and the ``key`` of
    #: OTLP ``attributes`` lists (``[{"key": ..., "value": ...}]``), at most ``ATTRIBUTE_KEYS``.
    attribute_keys: set[str] = field(default_factory=set)

    def keys(self, prefix: str = "") -> set[str]:
        """Keys seen in objects at an ijson prefix ('' = root object, 'item' = array items)."""
        return self.keys_at.get(prefix, set())

    def describe(self) -> str:
        """What the file is, in a few words, for an error saying it is not of a forced format."""
        if self.kind == "zip":
            return f"a zip archive of {len(self.zip_members)} member(s) ({_listing(self.zip_members)})"
        if self.kind == "text":
            first = next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")
            return f"plain text starting {first[:60]!r}"
        keys = self.record_keys()
        if self.kind == "jsonl":
            return f"JSON Lines whose first line has the keys {_listing(keys)}" if keys else "JSON Lines"
        if self.root == "array":
            return f"a JSON array of objects with the keys {_listing(keys)}" if keys else "a JSON array"
        return f"a JSON object with the keys {_listing(keys)}" if keys else f"a JSON {self.root or 'document'}"

    def record_keys(self) -> set[str]:
        """Keys of the record: the root object's, or the first array item's, or JSONL line 1's."""
        if self.kind == "jsonl":
            first = self.lines[0] if self.lines else None
            return set(first) if isinstance(first, dict) else set()
        return self.keys("item") if self.root == "array" else self.keys("")


def _listing(names, limit: int = 8) -> str:
    """Names (keys, members) sorted and cut to ``limit``, each quoted so control characters show."""
    names = sorted(map(str, names))
    shown = ", ".join(repr(n[:40]) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


class _Budget(io.RawIOBase):
    """A read-only stream that ends after ``limit`` bytes, so a parse stays bounded."""

    def __init__(self, fh, limit: int):
        self._fh = fh
        self._left = limit

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:
        if self._left <= 0:
            return 0
        data = self._fh.read(min(len(buf), self._left))
        self._left -= len(data)
        buf[: len(data)] = data
        return len(data)


def read_head(path: Path, opts: ImportOptions | None = None) -> Head:
    """Look at the start of ``path``; ImportFailure for files no importer could ever read."""
    opts = opts or ImportOptions()
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            raw = fh.read(HEAD_BYTES)
    except OSError as exc:
        raise ImportFailure(str(path), f"cannot read: {exc.strerror or exc}") from exc
    if size == 0 or not raw.strip():
        raise ImportFailure(str(path), "empty file")
    if size > opts.max_bytes:
        raise ImportFailure(
            str(path), f"file is {size:,} bytes, over the import limit of {opts.max_bytes:,} bytes"
        )
    if raw.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as zf:
                infos = zf.infolist()
        except zipfile.BadZipFile as exc:
            raise ImportFailure(str(path), f"broken zip archive: {exc}") from exc
        _check_inflated(path, size, sum(i.file_size for i in infos), opts)
        return Head(path=path, size=size, kind="zip", zip_members=[i.filename for i in infos])
    if b"\x00" in raw:
        raise UnknownFormat(str(path), "binary file (contains NUL bytes), not a trajectory")
    text = decode_utf8(path, raw, complete=size <= HEAD_BYTES)
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped[:1] in "{[":
        lines = _jsonl_head(path, len(text.encode()) - len(stripped.encode()))
        if lines is not None:
            return Head(path=path, size=size, kind="jsonl", text=text, lines=lines)
        with path.open("rb") as fh:
            if nesting(fh.read(PARSE_BYTES)) > MAX_NESTING:
                raise ImportFailure(str(path), f"JSON nested deeper than {MAX_NESTING:,} levels: refused")
        head = Head(path=path, size=size, kind="json", text=text)
        try:
            _json_shape(path, head)
        except ImportFailure:
            if _log_not_json(path):
                return Head(path=path, size=size, kind="text", text=text)
            raise
        return head
    return Head(path=path, size=size, kind="text", text=text)


#: Suffixes that promise JSON: a parse error in such a file is reported, never read as a log.
_JSON_SUFFIXES = {".json", ".jsonl", ".ndjson", ".traj", ".eval"}


def _check_inflated(path: Path, size: int, inflated: int, opts: ImportOptions) -> None:
    """Refuse a zip archive, from the sizes its directory declares (reading a member never inflates
    past its declared size), that would inflate over the limit or like a zip bomb."""
    if inflated > opts.max_bytes:
        raise ImportFailure(str(path), f"zip archive inflates to {inflated:,} bytes, over the import limit of"
                                       f" {opts.max_bytes:,} bytes (--max-size)")
    if inflated > ZIP_FLOOR and inflated > ZIP_RATIO * size:
        raise ImportFailure(str(path), f"zip archive would inflate {inflated // size:,}-fold, to {inflated:,} bytes:"
                                       " refused as a zip bomb")


#: JSON strings (their brackets do not nest) and every byte that is not a bracket.
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def nesting(data: bytes) -> int:
    """How deep the JSON text ``data`` nests (brackets inside strings do not count)."""
    depth = deepest = 0
    for b in _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS):
        if b in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _log_not_json(path: Path) -> bool:
    """Whether a file that starts with '[' or '{' but fails to parse on its first line is a log.

    ChatDev and MetaGPT logs open with ``[2023-25-08 10:05:12 INFO]``; a file named ``.json``
    that breaks there is still a broken JSON file and gets the parse error.
    """
    if path.suffix.lower() in _JSON_SUFFIXES:
        return False
    exc = _json_problem(path)
    return exc is not None and exc.lineno == 1 and exc.colno <= 80


def decode_utf8(path: Path, raw: bytes, complete: bool = True) -> str:
    """``raw`` as text; ImportFailure naming the line of the first invalid byte.

    With ``complete=False`` (a head cut from a longer file) a character cut at the end is not
    an error.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not complete and exc.start >= len(raw) - 3:
            return raw[: exc.start].decode("utf-8")
        line = raw[: exc.start].count(b"\n") + 1
        raise ImportFailure(str(path), f"invalid UTF-8 (byte {exc.start})", where=f"line {line}") from exc


def _jsonl_head(path: Path, start: int) -> list[object] | None:
    """The first lines parsed, if the file is JSON Lines (two or more one-line JSON values);
    ``start`` is where its first value begins (after a BOM or blank lines).

    The first line is read whole however long it is (evaluation records of 300 KB a line are
    common), up to ``FIRST_LINE_BYTES``; the lines after it only within ``HEAD_BYTES``.
    """
    with path.open("rb") as fh:
        fh.seek(start)
        first = fh.readline(FIRST_LINE_BYTES + 1)
        if len(first) > FIRST_LINE_BYTES or not first.endswith(b"\n"):
            return None  # one value to the end of the file (or a line no head should hold): JSON
        try:
            first_value = orjson.loads(first)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(first_value, (dict, list)):
            return None
        tail = fh.read(HEAD_BYTES)
        at_end = not fh.read(1)
    raw_lines = tail.splitlines()
    complete_lines = raw_lines if at_end or tail.endswith(b"\n") else raw_lines[:-1]
    if not any(ln.strip() for ln in raw_lines):
        return None  # a one-line file is plain JSON
    parsed: list[object] = [first_value]
    for ln in complete_lines[: JSONL_LINES - 1]:
        if not ln.strip():
            continue
        try:
            parsed.append(orjson.loads(ln))
        except orjson.JSONDecodeError:
            parsed.append(None)  # a bad line: the importer reports it with its number
    return parsed


def _json_shape(path: Path, head: Head) -> None:
    """Record object keys and scalar values near the root with a bounded incremental parse."""
    try:
        with path.open("rb") as fh:
            stream = io.BufferedReader(_Budget(fh, PARSE_BYTES))
            for prefix, event, value in ijson.parse(stream, use_float=True):
                depth = prefix.count(".") + 1 if prefix else 0
                if head.root is None:
                    head.root = "object" if event == "start_map" else "array" if event == "start_array" else "scalar"
                if len(head.attribute_keys) < ATTRIBUTE_KEYS:
                    _attribute_key(head, prefix, event, value)
                if depth > _MAX_DEPTH:
                    continue
                if event == "map_key":
                    head.keys_at.setdefault(prefix, set()).add(value)
                elif event in ("string", "number", "boolean", "null"):
                    head.scalars.setdefault(prefix, value)
    except ijson.common.IncompleteJSONError as exc:
        if head.size > PARSE_BYTES:
            return  # the budget ran out, not the JSON
        raise ImportFailure(str(head.path), "malformed JSON: " + _json_error(path), where=_json_where(path)) from exc
    except (ijson.common.JSONError, UnicodeDecodeError) as exc:  # yajl can mis-decode escaped surrogates
        raise ImportFailure(str(head.path), "malformed JSON: " + _json_error(path), where=_json_where(path)) from exc


def _attribute_key(head: Head, prefix: str, event: str, value: object) -> None:
    if event == "map_key" and (prefix == "attributes" or prefix.endswith(".attributes")):
        head.attribute_keys.add(value)
    elif event == "string" and prefix.endswith("attributes.item.key"):
        head.attribute_keys.add(value)


def _json_problem(path: Path) -> json.JSONDecodeError | None:
    with path.open("rb") as fh:
        text = fh.read(PARSE_BYTES).decode("utf-8", "replace")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc
    return None


def _json_error(path: Path) -> str:
    exc = _json_problem(path)
    return exc.msg if exc else "unexpected content"


def _json_where(path: Path) -> str | None:
    exc = _json_problem(path)
    return f"line {exc.lineno} column {exc.colno}" if exc else None


#: Keys under which producers keep a trajectory's steps: a record with one (or with a key made
#: of one, ``messages_display``) is a trajectory, even when no importer reads its producer.
TRAJECTORY_KEYS = {"messages", "traj", "trajectory", "history", "events", "steps", "turns", "conversation",
                   "conversations", "chat_history", "spans", "transcript"}


def unsupported(head: Head) -> str | None:
    """What a file no importer recognises looks like, when its records look like trajectories
    (a list of objects with ``messages``, ``traj``, ``history`` ...), or None."""
    words = {w for key in head.record_keys() for w in str(key).lower().split("_")}
    if head.kind not in ("json", "jsonl") or not words & TRAJECTORY_KEYS:
        return None
    return f"looks like {head.describe()}: a trajectory of a producer no importer reads"
