"""Keeping secrets out of what a run stores and prints.

A server may echo the API key back in an error ("Incorrect API key provided: sk-..."), and a
``--base-url`` may carry credentials (``https://user:token@host/v1``). Both would otherwise
reach ``run_items.error``, the run's parameters and the terminal. Every such text passes
through a :class:`Redactor` first.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

#: What a secret is replaced by.
MASK = "[redacted]"
#: Shorter "secrets" are not masked: they would mask ordinary words (a key of "x" in a test).
_MIN_SECRET = 6


def strip_credentials(url: str | None) -> str | None:
    """``url`` without the user and password part of its authority (the rest unchanged)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.username is None and parts.password is None:
        return url
    # The host and port as written: parsing the port would fail on a malformed one and leave the
    # credentials in place.
    return urlunsplit(parts._replace(netloc=f"{MASK}@{parts.netloc.rpartition('@')[2]}"))


class Redactor:
    """Masks an API key and a URL's credentials wherever they appear in a text."""

    def __init__(self, api_key: str | None, base_url: str | None = None):
        secrets = [api_key or ""]
        if base_url:
            try:
                parts = urlsplit(base_url)
                secrets += [parts.password or "", parts.username or ""]
            except ValueError:
                pass
        self._secrets = sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text

    def url(self, url: str) -> str:
        """A URL safe to store and show."""
        return self(strip_credentials(url) or "")
