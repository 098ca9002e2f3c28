"""The embedded store: one SQLite file, opened only through :func:`open_db` (or, by a
process that only reads, :func:`open_db_to_read`).

Nobody outside this package writes SQL. The CLI, the TUI, the labellers and the reports call
the typed functions of the modules below, so that every front end reads and writes the same
way and the schema can evolve behind them through numbered migrations.
"""

from annotator.store.db import data_version, open_db, open_db_to_read, write

__all__ = ["data_version", "open_db", "open_db_to_read", "write"]
