"""The fake OpenAI-compatible server standing in for every LLM provider, wired the way the service reads it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from api.settings import reset_settings
from tests.support.fakes.network import forbid_network
from tests.support.fakes.openai_server import FakeOpenAI


@contextmanager
def fake_provider(monkeypatch: pytest.MonkeyPatch, retries: int = 1, **env: str) -> Iterator[FakeOpenAI]:
    """Start the fake server, point every provider's base URL at it (SWITCHBOARD_LLM_API_BASE), set LiteLLM's
    retries and any extra environment, and guard the network: DSPy, LiteLLM and GEPA may talk only to the fake
    (and to loopback services such as Prefect). Fails the test if anything tried to go further."""
    fake = FakeOpenAI().start()
    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", fake.base_url)
    monkeypatch.setenv("SWITCHBOARD_LLM_RETRIES", str(retries))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    reset_settings()
    refused = forbid_network(monkeypatch)
    try:
        yield fake
    finally:
        fake.stop()
        reset_settings()
    assert refused == [], f"a test reached beyond this machine: {refused}"
