"""The failure-mode codebook: its model, the built-in MAST taxonomy and a loader for custom ones.

A codebook is data, not code: another taxonomy is a YAML or JSON file with the same schema,
loaded with :func:`load_taxonomy`. Every label in the product is keyed by a mode's ``id``;
names are display strings, because the official MAST artifacts disagree on names (and even
swap FM-3.2 and FM-3.3 under the same name). ``version_hash`` identifies the exact codebook a
label was made with.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from annotator.errors import AnnotatorError


def _builtin_path() -> Path:
    """Where the built-in codebook is: next to this module in an installed wheel (the build copies
    it there), else in the repository's ``taxonomy/`` folder, the codebook's source."""
    packaged = Path(__file__).with_name("mast.yaml")
    return packaged if packaged.is_file() else Path(__file__).resolve().parents[2] / "taxonomy" / "mast.yaml"


BUILTIN_PATH = _builtin_path()

#: Keys of the annotation keyboard, in the order the TUI offers them to a custom codebook.
HOTKEY_ROWS = "12345qwertyasdfghzxcvbn67890uiop"


class TaxonomyError(AnnotatorError, ValueError):
    """A taxonomy file that cannot be read or does not satisfy the schema: an expected failure
    every front end shows as one line, wherever the codebook is loaded."""


class Category(BaseModel):
    """A group of failure modes (MAST calls them FC1..FC3)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Stable id, e.g. 'FC1'.")
    name: str = Field(description="Display name.")
    definition: str = Field("", description="What the modes of this category have in common.")
    aliases: tuple[str, ...] = Field((), description="Names other artifacts use for this category.")


class Mode(BaseModel):
    """One failure mode: the unit every label refers to."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Stable id, e.g. 'FM-1.3'. Labels are keyed by it.")
    name: str = Field(description="Display name; never used as a key.")
    category: str = Field(description="Id of the category the mode belongs to.")
    definition: str = Field(description="What counts as this failure, in one or two sentences.")
    hotkey: str = Field(description="The single key that toggles the mode in the TUI.")
    aliases: tuple[str, ...] = Field(
        (), description="Codes and names other artifacts use for the same mode ('1.3', 'Step Repetition')."
    )

    @property
    def code(self) -> str:
        """The bare code other tools use ('1.3' for 'FM-1.3')."""
        return self.id.removeprefix("FM-")


class Taxonomy(BaseModel):
    """A whole codebook: categories, modes and provenance."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Name of the codebook, e.g. 'MAST'.")
    version: str = Field(description="Human-readable version, e.g. 'paper-v3'.")
    citation: str = Field("", description="Where the codebook comes from.")
    categories: tuple[Category, ...] = Field(min_length=1)
    modes: tuple[Mode, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Taxonomy:
        problems: list[str] = []
        cat_ids = [c.id for c in self.categories]
        for dup in sorted({c for c in cat_ids if cat_ids.count(c) > 1}):
            problems.append(f"category id {dup!r} is used more than once")
        mode_ids = [m.id for m in self.modes]
        for dup in sorted({m for m in mode_ids if mode_ids.count(m) > 1}):
            problems.append(f"mode id {dup!r} is used more than once")
        keys = [m.hotkey for m in self.modes]
        for dup in sorted({k for k in keys if keys.count(k) > 1}):
            problems.append(f"hotkey {dup!r} is given to more than one mode")
        for m in self.modes:
            if m.category not in cat_ids:
                problems.append(f"mode {m.id}: unknown category {m.category!r} (known: {', '.join(cat_ids)})")
            if len(m.hotkey) != 1 or not m.hotkey.isprintable() or m.hotkey.isspace():
                problems.append(f"mode {m.id}: hotkey must be one printable character, got {m.hotkey!r}")
            if not m.definition.strip():
                problems.append(f"mode {m.id}: definition is empty")
        seen: dict[str, str] = {}
        for m in self.modes:
            for alias in (m.id, *m.aliases):
                key = _norm(alias)
                if key in seen and seen[key] != m.id:
                    problems.append(f"alias {alias!r} names both {seen[key]} and {m.id}")
                seen[key] = m.id
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def version_hash(self) -> str:
        """A short hash of the codebook's content: labels record it so a report knows their codebook."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    @property
    def mode_ids(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.modes)

    def mode(self, mode_id: str) -> Mode:
        """The mode with this id; KeyError if there is none."""
        for m in self.modes:
            if m.id == mode_id:
                return m
        raise KeyError(mode_id)

    def modes_in(self, category_id: str) -> tuple[Mode, ...]:
        return tuple(m for m in self.modes if m.category == category_id)

    def resolve(self, code_or_name: str) -> str | None:
        """The canonical id for an id, a bare code ('1.3') or any alias; None if nothing matches."""
        return _alias_index(self).get(_norm(code_or_name))


def _norm(text: str) -> str:
    return re.sub(r"[\s_'’-]+", " ", text.strip().lower()).strip()


@cache
def _alias_index(tax: Taxonomy) -> dict[str, str]:
    index: dict[str, str] = {}
    for m in tax.modes:
        for alias in (m.id, m.code, m.name, *m.aliases):
            index[_norm(alias)] = m.id
    return index


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load a codebook from a YAML/JSON file, or the built-in MAST taxonomy when ``path`` is None."""
    source = Path(path) if path is not None else BUILTIN_PATH
    if path is None:
        return _builtin()
    return _load(source)


@cache
def _builtin() -> Taxonomy:
    return _load(BUILTIN_PATH)


def _load(source: Path) -> Taxonomy:
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaxonomyError(f"{source}: cannot read taxonomy file: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise TaxonomyError(f"{source}{where}: not valid YAML/JSON: {getattr(exc, 'problem', exc)}") from exc
    if not isinstance(data, dict):
        raise TaxonomyError(f"{source}: a taxonomy file must hold a mapping with 'categories' and 'modes'")
    try:
        return Taxonomy.model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"  {loc}: {err['msg'].removeprefix('Value error, ')}")
        raise TaxonomyError(f"{source}: invalid taxonomy:\n" + "\n".join(lines)) from exc
