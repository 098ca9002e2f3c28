"""Files already imported, by content: the short cut of an unchanged re-import.

An import of a file that an importer reads alone (see ``Importer.self_contained``) records,
when it is published, the file's sha256 and the (id, content hash) of each trajectory it gave
(migration 010). Importing the same bytes again, with the same options, is then answered from
that record: unchanged, without parsing anything, as long as every one of those trajectories
is still stored, visible, with that content (none deleted, none replaced by another file).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson
from sqlite_utils import Database

from annotator.models import utcnow


def unchanged_ids(db: Database, path: str, importer: str, options: str, sha256: str) -> list[str] | None:
    """The ids of the trajectories ``path`` gave when its bytes were ``sha256``, if all of them
    are still stored as they were; else None (the file must be read)."""
    row = db.execute(
        "SELECT sha256, trajectories FROM import_sources WHERE path = ? AND importer = ? AND options = ?",
        [path, importer, options],
    ).fetchone()
    if row is None or row[0] != sha256:
        return None
    kept = db.execute(
        "SELECT count(*) FROM json_each(?) j JOIN trajectories t ON t.id = j.key"
        " AND t.content_hash = j.value AND t.pending IS NULL",
        [row[1]],
    ).fetchone()[0]
    ids = list(orjson.loads(row[1]))
    return ids if kept == len(ids) else None


def record_source(db: Database, path: str, importer: str, options: str, sha256: str,
                  trajectories: Mapping[str, str]) -> None:
    """Remember that ``path`` with content ``sha256`` gave ``trajectories`` (id: content hash);
    inside the transaction that publishes the import."""
    db.execute(
        "INSERT OR REPLACE INTO import_sources (path, importer, options, sha256, trajectories, imported_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [path, importer, options, sha256, orjson.dumps(dict(trajectories)).decode(), utcnow().isoformat()],
    )
