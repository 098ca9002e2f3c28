"""The embedded store: one SQLite file, opened only through :func:`open_db`.

Nobody outside this package writes SQL. The CLI, the TUI, the labellers and the reports call
the typed functions of the modules below, so that every front end reads and writes the same
way and the schema can evolve behind them through numbered migrations.
"""

from annotator.store.db import open_db, write

__all__ = ["open_db", "write"]
