"""Placeholders for images, audio and other media inside trajectories.

Agents send screenshots and files to the model inline, as base64 (a ``data:`` URI, or a
``{media_type, data}`` pair). Shown as text, one screenshot is a hundred thousand characters
of noise that buries the task and every step around it, and says nothing an annotator can
judge. Importers replace each with a short placeholder naming its type and size, e.g.
``[image: image/png, 88.9 kB]``; the untouched original stays in the step's ``raw``.

:func:`media_text` knows the content-part shapes of the producers we read (Inspect,
OpenAI chat and Responses/Codex, Anthropic/Claude Code, Gemini); :func:`scrub_data_uris`
catches a data URI embedded in plain text.
"""

from __future__ import annotations

import re

from rich.filesize import decimal

_DATA_URI = re.compile(r"data:(?P<type>[\w.+-]+/[\w.+-]+)?(?:;[\w.+-]+=[\w.+-]+)*;base64,(?P<data>[A-Za-z0-9+/=]+)")
#: Content-part ``type`` values that hold media: their kind (the payload is under the same key,
#: ``image_url`` or Anthropic's ``source``).
_PARTS = {"image": "image", "input_image": "image", "image_url": "image", "audio": "audio",
          "input_audio": "audio", "video": "video", "document": "file", "file": "file"}


def base64_size(data: str) -> int:
    """The number of bytes a base64 text decodes to (whitespace ignored)."""
    n = len(data) - data.count("\n") - data.count("\r") - data.count(" ")
    return max(0, n * 3 // 4 - data[-2:].count("="))


def placeholder(kind: str, media_type: str | None = None, size: int | None = None, source: str | None = None) -> str:
    """The text shown instead of a media item: ``[image: image/png, 88.9 kB]``."""
    details = [d for d in (media_type, decimal(size) if size is not None else None, source) if d]
    return f"[{kind}: {', '.join(details)}]" if details else f"[{kind}]"


def _kind(media_type: str | None, fallback: str) -> str:
    head = (media_type or "").split("/", 1)[0]
    return head if head in ("image", "audio", "video") else fallback


def uri_text(uri: str, kind: str = "image") -> str:
    """A placeholder for a media reference: a data URI by type and size, a URL by its address."""
    match = _DATA_URI.fullmatch(uri.strip())
    if match:
        return placeholder(_kind(match["type"], kind), match["type"], base64_size(match["data"]))
    if uri.startswith("data:"):
        return placeholder(kind, uri[5:].split(";", 1)[0].split(",", 1)[0] or None)
    return placeholder(kind, source=uri[:200])


def scrub_data_uris(text: str) -> str:
    """``text`` with every base64 data URI in it replaced by its placeholder."""
    if "base64," not in text:
        return text
    return _DATA_URI.sub(lambda m: placeholder(_kind(m["type"], "file"), m["type"], base64_size(m["data"])), text)


def media_text(part: object) -> str | None:
    """The placeholder for a content part that carries media, or None for any other part.

    Shapes: Inspect ``{type: image, image}``, ``{type: audio|video, audio|video, format}``;
    OpenAI chat ``{type: image_url, image_url: {url}}``, ``{type: input_audio, input_audio:
    {data, format}}``; Responses/Codex ``{type: input_image, image_url}``; Anthropic
    ``{type: image|document, source: {type: base64, media_type, data}}``; Gemini
    ``{inlineData: {mimeType, data}}`` (or ``inline_data``/``mime_type``).
    """
    if not isinstance(part, dict):
        return None
    inline = part.get("inlineData") or part.get("inline_data")
    if isinstance(inline, dict):
        mime = inline.get("mimeType") or inline.get("mime_type")
        data = inline.get("data")
        mime = mime if isinstance(mime, str) else None
        return placeholder(_kind(mime, "file"), mime, base64_size(data) if isinstance(data, str) else None)
    ptype = part.get("type")
    if not isinstance(ptype, str) or ptype not in _PARTS:
        return None
    kind = _PARTS[ptype]
    value = next((part[k] for k in (ptype, "image_url", "source") if part.get(k) is not None), None)
    if isinstance(value, dict):
        mime = value.get("media_type") or value.get("mime_type")
        if not isinstance(mime, str):
            mime = f"{kind}/{value['format']}" if isinstance(value.get("format"), str) else None
        for ref in ("url", "file_data"):
            if isinstance(value.get(ref), str):
                return uri_text(value[ref], kind)
        if isinstance(value.get("data"), str):
            return placeholder(_kind(mime, kind), mime, base64_size(value["data"]))
        source = value.get("file_id") or value.get("filename")
        return placeholder(kind, mime, source=source if isinstance(source, str) else None)
    if isinstance(value, str):
        return uri_text(value, kind)
    return placeholder(kind)
