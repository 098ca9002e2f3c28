"""The importer registry lists every importer the package defines, each once, and nothing else."""

from __future__ import annotations

import importlib
import pkgutil

import annotator.importers
from annotator.importers.base import Importer
from annotator.importers.registry import IMPORTERS, registry


def _defined_importers() -> set[type[Importer]]:
    """Every concrete Importer subclass in a module of annotator.importers."""
    for info in pkgutil.iter_modules(annotator.importers.__path__):
        importlib.import_module(f"annotator.importers.{info.name}")
    found: set[type[Importer]] = set()
    todo = list(Importer.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if "name" in cls.__dict__ and cls.__module__.startswith("annotator.importers."):
            found.add(cls)
    return found


def test_every_importer_is_listed_once():
    listed = {type(imp) for imp in registry().values()}
    assert len(listed) == len(IMPORTERS)
    missing = sorted(f"{c.__module__.rsplit('.', 1)[1]}:{c.__name__}" for c in _defined_importers() - listed)
    assert missing == [], f"add these lines to IMPORTERS in annotator/importers/registry.py: {missing}"


def test_registry_keys_are_the_importers_names_in_listed_order():
    importers = registry()
    assert [f"{type(i).__module__.rsplit('.', 1)[1]}:{type(i).__name__}" for i in importers.values()] == list(IMPORTERS)
    assert all(name == imp.name for name, imp in importers.items())


def test_registry_hands_out_copies():
    registry().clear()
    assert registry()
