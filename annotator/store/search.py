"""Full-text search over step contents (the ``steps_fts`` FTS5 index).

What a person types is never passed to FTS5 as syntax: :func:`fts_query` makes every word a
quoted term, so a query of punctuation or operators cannot fail or match everything.
"""

from __future__ import annotations

import re

from sqlite_utils import Database

from annotator.views import SearchHit


def fts_query(text: str) -> str:
    """Turn what a user typed into a safe FTS5 query: every word a quoted term, all required."""
    words = re.findall(r"\w+", text)
    return " ".join('"' + w.replace('"', '""') + '"' for w in words) or '""'


def search_steps(
    db: Database, text: str, trajectory_id: str | None = None, limit: int = 100
) -> list[SearchHit]:
    """Steps whose content contains every word of ``text``, best matches first."""
    sql = (
        "SELECT s.trajectory_id, s.idx, snippet(steps_fts, 0, '«', '»', '…', 12) FROM steps_fts"
        " JOIN steps s ON s.rowid = steps_fts.rowid WHERE steps_fts MATCH ?"
        " AND s.trajectory_id NOT IN (SELECT id FROM trajectories WHERE pending IS NOT NULL)"
    )
    params: list = [fts_query(text)]
    if trajectory_id is not None:
        sql += " AND s.trajectory_id = ?"
        params.append(trajectory_id)
    sql += " ORDER BY rank LIMIT ?"
    params.append(limit)
    return [SearchHit(trajectory_id=r[0], index=r[1], snippet=r[2]) for r in db.execute(sql, params)]
