"""JSON columns: how model fields that hold structures are written to and read from TEXT columns."""

from __future__ import annotations

from typing import Any

import orjson


def dumps(value: Any) -> str:
    """Serialise for a TEXT column; values orjson cannot encode natively are stringified."""
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def loads(text: str | bytes | None, default: Any = None) -> Any:
    if text is None or text == "":
        return default
    return orjson.loads(text)
