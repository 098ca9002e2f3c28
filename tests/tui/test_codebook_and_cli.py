"""A custom codebook brings its own hotkeys; one that takes a reserved key is refused; `mast annotate` CLI edges."""

from __future__ import annotations

import pytest
import yaml
from click.testing import CliRunner

from annotator.cli import main
from annotator.store import labels
from annotator.taxonomy import load_taxonomy
from annotator.tui.app import make_app
from annotator.tui.keys import HotkeyClash


def _codebook(tmp_path, hotkeys: tuple[str, str]):
    data = {
        "name": "Tiny",
        "version": "1",
        "categories": [{"id": "C1", "name": "Everything"}],
        "modes": [
            {"id": "X-1", "name": "Looping", "category": "C1", "definition": "Repeats itself.", "hotkey": hotkeys[0]},
            {"id": "X-2", "name": "Giving up", "category": "C1", "definition": "Stops early.", "hotkey": hotkeys[1]},
        ],
    }
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


async def test_custom_codebook_hotkeys_tag_its_modes(tui_db, tmp_path, read_screen):
    tax = load_taxonomy(_codebook(tmp_path, ("z", "x")))
    app = make_app(tui_db, "alice", taxonomy=tax)
    async with app.run_test(size=(140, 42)) as pilot:
        app.open_trajectory("t1")
        await pilot.pause()
        await pilot.press("space", "z")
        assert "C1 Everything" in read_screen(app) and "Looping" in read_screen(app)
        [lab] = labels.current_labels(app.db, "t1", "alice")
        assert (lab.mode_id, lab.onset_step, lab.taxonomy_hash) == ("X-1", 1, tax.version_hash)


def test_a_codebook_using_a_reserved_key_is_refused(tui_db, tmp_path):
    with pytest.raises(HotkeyClash, match=r"X-2 \('j'\)"):
        make_app(tui_db, "alice", taxonomy=load_taxonomy(_codebook(tmp_path, ("z", "j"))))
    result = CliRunner().invoke(main, ["--db", str(tui_db), "annotate", "--taxonomy", str(_codebook(tmp_path, ("z", "u")))])
    assert result.exit_code == 1
    assert "hotkeys reserved by the annotation screen are used by: X-2 ('u')" in result.output


def test_annotate_help_has_examples():
    result = CliRunner().invoke(main, ["annotate", "--help"])
    assert result.exit_code == 0
    assert "mast --db study.db annotate runs/" in result.output and "--blind" in result.output
