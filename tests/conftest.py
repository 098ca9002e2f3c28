"""Shared fixtures: a fresh database per test, the sample data, and a database with samples imported."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
TRAJECTORIES = ROOT / "trajectories"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "mast.db"


@pytest.fixture
def db(db_path: Path):
    from annotator.store import open_db

    database = open_db(db_path)
    yield database
    database.close()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.fail(f"the shared sample data is missing at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def sample_db(db):
    """A database with every file of trajectories/ imported."""
    from annotator.importers.importing import import_paths

    summary = import_paths(db, [TRAJECTORIES])
    assert not summary.failed, [f.error for f in summary.failed]
    return db
