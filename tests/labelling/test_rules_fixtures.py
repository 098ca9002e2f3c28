"""The rule detectors' verdicts on every trajectory fixture, pinned: a faster detector must give
exactly these (mode, verdict, onset, cited steps, quote, reason), whether it reads a trajectory
from its model, pages it from the store, or scans it in parts joined."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotator.importers.importing import import_paths
from annotator.labelling.rules import RulesLabeller
from annotator.store import open_db
from annotator.store.trajectories import get_trajectory, list_trajectories
from annotator.taxonomy import load_taxonomy

FIXTURES = Path(__file__).parents[1] / "fixtures"
PINNED = FIXTURES / "rules_fixtures.json"
FIELDS = ("mode_id", "verdict", "onset_step", "evidence_steps", "quote", "rationale")


def found(folder: Path, tmp: Path) -> dict[str, list[list[list]]]:
    """Each source file's trajectories' verdicts, one list of fields a mode, in the three ways."""
    db = open_db(tmp / f"{folder.name}.db")
    import_paths(db, [folder])
    tax = load_taxonomy()
    out: dict[str, list] = {}
    for summary in list_trajectories(db):
        t = get_trajectory(db, summary.id)
        stored = RulesLabeller(db=db)
        ways = [RulesLabeller().verdicts(t, tax), stored.verdicts(t, tax)]
        indices = [s.index for s in t.steps]
        for k in (2, 3):
            cuts = sorted({indices[len(indices) * j // k] for j in range(1, k)} - {indices[0]}) if indices else []
            parts = [stored.part(t, tax.mode_ids, start, stop) for start, stop in zip([None, *cuts], [*cuts, None])]
            ways.append(stored.verdicts_from(t, parts))
        rows = [[[getattr(v, f) for f in FIELDS] for v in way] for way in ways]
        assert all(r == rows[0] for r in rows), t.source_path
        out.setdefault(str(Path(t.source_path).relative_to(FIXTURES)), []).append(rows[0])
    db.close()
    return {path: sorted(trajectories) for path, trajectories in out.items()}


@pytest.mark.parametrize("folder", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_fixture_verdicts_are_pinned(folder, tmp_path):
    pinned = json.loads(PINNED.read_text())
    got = found(FIXTURES / folder, tmp_path)
    assert got == {path: v for path, v in pinned.items() if path.split("/")[0] == folder}
