"""Media placeholders: every content-part shape we read gives type and decoded size."""

from __future__ import annotations

import base64

import pytest

from annotator.importers.media import base64_size, media_text, scrub_data_uris, uri_text

PNG = base64.b64encode(b"\x89PNG" + b"x" * 9996).decode()  # 10,000 bytes


@pytest.mark.parametrize("part", [
    {"type": "image", "image": f"data:image/png;base64,{PNG}", "detail": "auto"},  # Inspect
    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},  # Responses / Codex
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},  # OpenAI chat
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},  # Anthropic
    {"inlineData": {"mimeType": "image/png", "data": PNG}},  # Gemini
])
def test_image_parts(part):
    assert media_text(part) == "[image: image/png, 10.0 kB]"


def test_other_parts_and_references():
    assert media_text({"type": "text", "text": "hi"}) is None
    assert media_text("plain") is None
    assert media_text({"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}) == \
        "[image: https://example.org/a.png]"
    assert media_text({"type": "input_audio", "input_audio": {"data": PNG, "format": "wav"}}) == \
        "[audio: audio/wav, 10.0 kB]"
    assert uri_text("attachment://abc") == "[image: attachment://abc]"


def test_sizes_and_scrubbing():
    assert base64_size(base64.b64encode(b"abcde").decode()) == 5
    assert base64_size(base64.b64encode(b"abcd").decode()) == 4
    text = f"before data:image/jpeg;base64,{PNG} after"
    assert scrub_data_uris(text) == "before [image: image/jpeg, 10.0 kB] after"
    assert scrub_data_uris("no media here") == "no media here"
