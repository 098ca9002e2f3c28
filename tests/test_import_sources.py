"""An unchanged file is answered from its record, not read again; anything that could make
the answer wrong (other bytes, other options, a trajectory deleted or replaced) reads it."""

from __future__ import annotations

import shutil

from tests.samples import MAD_HUMAN, unlabelled_mad

from annotator.importers.base import ImportOptions
from annotator.importers.importing import import_file
from annotator.importers.mad import MadFull, MadHuman
from annotator.store.trajectories import delete_trajectory


def test_an_unchanged_file_is_not_read_again(db, tmp_path, monkeypatch):
    path = shutil.copy(MAD_HUMAN, tmp_path / "mad.json")
    first = import_file(db, path)
    assert first.imported == 4
    def refuse(self, path, opts):
        raise AssertionError(f"{path} was read")
    for cls in (MadFull, MadHuman):
        monkeypatch.setattr(cls, "read", refuse)
    again = import_file(db, path)
    assert again.ok and again.unchanged == 4 and again.imported == again.updated == again.labels == 0
    assert again.trajectory_ids == first.trajectory_ids


def test_other_options_or_bytes_read_the_file(db, tmp_path):
    path = unlabelled_mad(tmp_path / "mad.json")
    assert import_file(db, path).imported == 4
    assert import_file(db, path, opts=ImportOptions(model="m")).updated == 4
    assert import_file(db, path, opts=ImportOptions(model="m")).unchanged == 4
    path.write_bytes(path.read_bytes().replace(b"}]", b"} ]"))  # other bytes, the same records
    assert import_file(db, path, opts=ImportOptions(model="m")).unchanged == 4


def test_a_deleted_trajectory_makes_the_file_read_again(db, tmp_path):
    path = shutil.copy(MAD_HUMAN, tmp_path / "mad.json")
    first = import_file(db, path)
    delete_trajectory(db, first.trajectory_ids[0])
    again = import_file(db, path)
    assert again.imported == 1 and again.unchanged == 3


def test_a_trajectory_another_file_changed_makes_the_file_read_again(db, tmp_path):
    path = shutil.copy(MAD_HUMAN, tmp_path / "mad.json")
    first = import_file(db, path)
    db.execute("UPDATE trajectories SET content_hash = 'other' WHERE id = ?", [first.trajectory_ids[1]])
    db.conn.commit()
    again = import_file(db, path)
    assert again.updated == 1 and again.unchanged == 3
