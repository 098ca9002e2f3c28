"""What `mast` takes from the environment, in one place, read once at the edge.

The CLI builds one :class:`Settings` when a command starts, with its flags as overrides, and
the TUI's factory builds one when it is started without the CLI; everything below them is
handed plain values (a path, a name, a key) and never reads the environment, so a test or
another front end passes its own. This module is the only one that reads ``os.environ``.
"""

from __future__ import annotations

import getpass
import os
import tempfile
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from annotator.errors import AnnotatorError

#: The judge's key variable when neither ``--api-key-env`` nor ``MAST_API_KEY_ENV`` names one.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


def _tiktoken_default() -> Path:
    return Path(tempfile.gettempdir()) / "data-gym-cache"


class Settings(BaseSettings):
    """The environment `mast` reads: ``MAST_*`` variables, plus the ones other tools define."""

    model_config = SettingsConfigDict(
        env_prefix="MAST_", env_ignore_empty=True, extra="ignore", use_attribute_docstrings=True
    )

    db: Path = Path("mast.db")
    """The database file (``MAST_DB``); ``--db`` overrides it."""

    annotator: str | None = None
    """Whose labels the app writes and whose review status ``--status`` means
    (``MAST_ANNOTATOR``); :meth:`annotator_name` falls back to the OS user name.
    ``--annotator`` overrides it."""

    judge_base_url: str | None = Field(
        None, validation_alias=AliasChoices("MAST_JUDGE_BASE_URL", "OPENAI_BASE_URL")
    )
    """The judge's OpenAI-compatible endpoint (``MAST_JUDGE_BASE_URL``, else the openai client's
    own ``OPENAI_BASE_URL``); None means OpenAI. ``--base-url`` overrides it."""

    api_key_env: str = DEFAULT_API_KEY_ENV
    """The name of the variable holding the judge's API key (``MAST_API_KEY_ENV``); the key is
    read from it when a run starts and is never stored. ``--api-key-env`` overrides it."""

    tiktoken_cache_dir: Path = Field(
        default_factory=_tiktoken_default, validation_alias=AliasChoices("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")
    )
    """Where tiktoken keeps its vocabularies (its own ``TIKTOKEN_CACHE_DIR`` or
    ``DATA_GYM_CACHE_DIR``, else its folder in the temp dir). Tokens are counted exactly only
    when a vocabulary is cached there, so that counting never downloads one."""

    def annotator_name(self) -> str:
        """The annotator, else the OS user name (asked only when needed: it can fail in a container)."""
        if self.annotator:
            return self.annotator
        try:
            return getpass.getuser()
        except (KeyError, OSError) as exc:  # a uid with no passwd entry and no LOGNAME/USER
            raise AnnotatorError("who is annotating? pass --annotator NAME or set MAST_ANNOTATOR") from exc

    def api_key(self, variable: str) -> str | None:
        """The API key held in the environment variable ``variable``, if it is set."""
        return os.environ.get(variable) or None
