"""The settings: every variable `mast` reads, read once at the edge, flags over the environment."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from annotator.cli import main
from annotator.settings import Settings
from annotator.store import open_db
from annotator.store.review import set_review
from tests.labelling.prelabel_helpers import add

VARIABLES = ("MAST_DB", "MAST_ANNOTATOR", "MAST_JUDGE_BASE_URL", "OPENAI_BASE_URL", "MAST_API_KEY_ENV",
             "TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_every_field_says_what_it_is_and_which_variable_sets_it():
    for name, field in Settings.model_fields.items():
        assert field.description and "``" in field.description, name


def test_defaults_without_any_variable():
    s = Settings()
    assert (s.db, s.annotator, s.judge_base_url, s.api_key_env) == (Path("mast.db"), None, None, "OPENAI_API_KEY")
    assert s.tiktoken_cache_dir == Path(tempfile.gettempdir()) / "data-gym-cache"  # where tiktoken looks


def test_the_judges_endpoint_prefers_mast_over_openai_and_skips_empty_values(clean_environment):
    clean_environment.setenv("OPENAI_BASE_URL", "http://openai.example/v1")
    assert Settings().judge_base_url == "http://openai.example/v1"
    clean_environment.setenv("MAST_JUDGE_BASE_URL", "")
    assert Settings().judge_base_url == "http://openai.example/v1"
    clean_environment.setenv("MAST_JUDGE_BASE_URL", "http://local:8080/v1")
    assert Settings().judge_base_url == "http://local:8080/v1"


def test_tiktoken_cache_follows_tiktoken_own_variables(tmp_path, clean_environment):
    clean_environment.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))
    assert Settings().tiktoken_cache_dir == tmp_path / "gym"
    clean_environment.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tik"))
    assert Settings().tiktoken_cache_dir == tmp_path / "tik"


def test_the_key_is_looked_up_by_name_and_an_empty_one_is_none(clean_environment):
    clean_environment.setenv("MY_KEY", "sk-local")
    clean_environment.setenv("EMPTY_KEY", "")
    assert (Settings().api_key("MY_KEY"), Settings().api_key("EMPTY_KEY"), Settings().api_key("NOPE")) == (
        "sk-local", None, None)


def test_mast_db_and_mast_annotator_reach_the_commands(tmp_path):
    path = tmp_path / "env.db"
    db = open_db(path)
    add(db, "t1", ["one", "two"])
    set_review(db, "t1", "carol", "done")
    db.close()
    env = {"MAST_DB": str(path), "MAST_ANNOTATOR": "carol"}
    listed = CliRunner().invoke(main, ["list", "--status", "done", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    assert '"id":"t1"' in listed.output
    flag_wins = CliRunner().invoke(main, ["--db", str(tmp_path / "other.db"), "list", "--json"], env=env)
    assert flag_wins.exit_code == 0 and flag_wins.output == ""


def test_mast_api_key_env_names_the_variable_a_run_needs(tmp_path):
    db = open_db(tmp_path / "k.db")
    add(db, "t1", ["one"])
    db.close()
    r = CliRunner().invoke(main, ["--db", str(tmp_path / "k.db"), "prelabel", "--model", "m", "--base-url",
                                  "http://127.0.0.1:9/v1"], env={"MAST_API_KEY_ENV": "TEAM_KEY", "TEAM_KEY": ""})
    assert r.exit_code == 1 and "no API key: set TEAM_KEY" in r.output


def test_tokens_are_counted_exactly_only_with_a_cached_vocabulary(tmp_path):
    from annotator.labelling.windows import TokenCounter

    empty = tmp_path / "empty"
    empty.mkdir()
    cached = tmp_path / "cached"
    cached.mkdir()
    (cached / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4").write_bytes(b"vocabulary")
    assert [TokenCounter(d).exact for d in (None, tmp_path / "missing", empty, cached)] == [False, False, False, True]
    assert TokenCounter(None)("x" * 35, "gpt-4o") == 10  # the character estimate, 3.5 characters a token


def test_no_annotator_and_no_user_name_is_one_clear_error(tmp_path, clean_environment):
    """In a container the uid may have no passwd entry and no USER: getpass cannot name anyone."""
    import getpass

    def nobody():
        raise OSError("No username set in the environment")

    clean_environment.setattr(getpass, "getuser", nobody)
    r = CliRunner().invoke(main, ["--db", str(tmp_path / "u.db"), "list", "--status", "done"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit), r.output
    assert "pass --annotator NAME or set MAST_ANNOTATOR" in r.output
