"""The embedded store: one SQLite file, opened only through :func:`open_db` (or, by a
process that only reads, :func:`open_db_to_read`).

Nobody outside this package writes SQL. The CLI, the TUI, the labellers and the reports call
the typed functions of the modules below, so that every front end reads and writes the same
way and the schema can evolve behind them through numbered migrations.
"""

import sys


def _load_sqlite_utils() -> None:
    """Import sqlite-utils without letting it pull in pandas and numpy.

    sqlite-utils imports both when they are installed (to insert their scalar types), which
    costs a third of a second at every ``mast`` start; the store writes plain Python values
    only, so the two are hidden from it for that one import.
    """
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

from annotator.store.db import data_version, open_db, open_db_to_read, write  # noqa: E402

__all__ = ["data_version", "open_db", "open_db_to_read", "write"]
