"""Fixtures for the pre-labelling tests: the local OpenAI-compatible server and small trajectories."""

from __future__ import annotations

import pytest

from tests.openai_server import FakeOpenAI


@pytest.fixture
def server():
    with FakeOpenAI(hang_seconds=4.0) as srv:
        yield srv


@pytest.fixture
def llama_like_server():
    with FakeOpenAI(supports_json_schema=False) as srv:
        yield srv
