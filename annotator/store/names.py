"""The names labels and review states stand under, read from an index that leads with them.

A store holds a few names and millions of rows: the names are found by skipping through the
index from one to the next, which reports and the schema's migrations both need.
"""

from __future__ import annotations

from sqlite_utils import Database


def annotator_names(db: Database, table: str) -> list[str]:
    """The distinct annotators of ``table``, sorted, each found by one search of an index that
    leads with them for the one after the last (a skip scan: there are a few names and
    millions of rows)."""
    return [r[0] for r in db.execute(
        f"WITH RECURSIVE names(name) AS (SELECT min(annotator) FROM {table} UNION ALL"
        f" SELECT (SELECT min(annotator) FROM {table} WHERE annotator > name) FROM names WHERE name IS NOT NULL)"
        " SELECT name FROM names WHERE name IS NOT NULL")]
