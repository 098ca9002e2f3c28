"""mast-annotator: find out why LLM agents and multi-agent systems fail (MAST taxonomy)."""

#: The package version (also the distribution's: pyproject reads it from here).
__version__ = "0.1.0"


def _load_sqlite_utils() -> None:
    """Import sqlite-utils without letting it pull in pandas (and numpy, unless already loaded).

    sqlite-utils imports both when they are installed (to insert their scalar types), which
    costs a third of a second at every ``mast`` start; the store writes plain Python values
    only, so the two are hidden from it for that one import. Done here, with the package, since
    any module may import ``sqlite_utils`` before the store (the annotation queue did, and the
    app's start paid pandas' import).
    """
    import sys

    if "sqlite_utils" in sys.modules:
        return
    hidden = [name for name in ("pandas", "numpy") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes `import name` fail fast
    try:
        import sqlite_utils  # noqa: F401
    finally:
        for name in hidden:
            del sys.modules[name]


_load_sqlite_utils()
