"""The built-in MAST codebook, aliases (with the 3.2/3.3 trap), the version hash and validation."""

from __future__ import annotations

import pytest
import yaml

from annotator.taxonomy import BUILTIN_PATH, TaxonomyError, load_taxonomy


def test_builtin_has_14_modes_in_3_categories():
    tax = load_taxonomy()
    assert [c.id for c in tax.categories] == ["FC1", "FC2", "FC3"]
    assert tax.mode_ids == ("FM-1.1", "FM-1.2", "FM-1.3", "FM-1.4", "FM-1.5", "FM-2.1", "FM-2.2", "FM-2.3",
                            "FM-2.4", "FM-2.5", "FM-2.6", "FM-3.1", "FM-3.2", "FM-3.3")
    assert [len(tax.modes_in(c)) for c in ("FC1", "FC2", "FC3")] == [5, 6, 3]
    assert "".join(m.hotkey for m in tax.modes) == "12345qwertyasd"
    assert tax.mode("FM-1.3").code == "1.3"
    assert all(m.definition.strip() for m in tax.modes)
    assert "2503.13657" in tax.citation


@pytest.mark.parametrize(
    ("alias", "mode"),
    [
        ("1.3", "FM-1.3"), ("FM-2.4", "FM-2.4"), ("step repetition", "FM-1.3"), ("Step_Repetition", "FM-1.3"),
        ("Information Witholding", "FM-2.4"), ("Backtracking interruption", "FM-1.4"),
        # the 3.2/3.3 trap: names as the paper means them, never as the swapped artifacts use them
        ("3.2", "FM-3.2"), ("No or Incomplete Verification", "FM-3.2"), ("Lack of result verification", "FM-3.2"),
        ("3.3", "FM-3.3"), ("Incorrect Verification", "FM-3.3"), ("Lack of critical verification", "FM-3.3"),
    ],
)
def test_aliases_resolve(alias, mode):
    assert load_taxonomy().resolve(alias) == mode


def test_unknown_alias_is_none():
    assert load_taxonomy().resolve("4.2") is None


def test_version_hash_is_stable_and_follows_content(tmp_path):
    tax = load_taxonomy()
    assert tax.version_hash == load_taxonomy(BUILTIN_PATH).version_hash
    assert len(tax.version_hash) == 12
    data = yaml.safe_load(BUILTIN_PATH.read_text())
    same = tmp_path / "same.yaml"
    same.write_text(yaml.safe_dump(data, sort_keys=True))  # same content, other layout
    assert load_taxonomy(same).version_hash == tax.version_hash
    data["modes"][0]["definition"] += " Changed."
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(data))
    assert load_taxonomy(changed).version_hash != tax.version_hash


def test_validate_reports_every_problem(tmp_path):
    data = yaml.safe_load(BUILTIN_PATH.read_text())
    data["modes"][1]["hotkey"] = "1"
    data["modes"][2]["category"] = "FC9"
    data["modes"][3]["id"] = "FM-1.1"
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(TaxonomyError) as exc:
        load_taxonomy(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: invalid taxonomy:")
    assert "mode id 'FM-1.1' is used more than once" in message
    assert "hotkey '1' is given to more than one mode" in message
    assert "mode FM-1.3: unknown category 'FC9'" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: x\nversion: 1\ncategories: [\n", "not valid YAML/JSON"),
        ("- just a list\n", "must hold a mapping"),
        ("name: x\nversion: '1'\ncategories: []\nmodes: []\n", "categories: Tuple should have at least 1 item"),
        ("name: x\nversion: '1'\ncategories: [{id: C, name: c}]\nmodes: [{id: M, name: m, category: C}]\n",
         "modes.0.definition: Field required"),
    ],
)
def test_validate_clear_errors(tmp_path, text, expected):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(TaxonomyError, match=expected.replace(".", r"\.").replace("[", r"\[")):
        load_taxonomy(path)


def test_missing_file(tmp_path):
    with pytest.raises(TaxonomyError, match="cannot read taxonomy file"):
        load_taxonomy(tmp_path / "none.yaml")
