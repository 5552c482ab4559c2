"""Prompt optimization tests: the real app with a fake flow launcher, and the fake OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.fakes.launcher import FakeLauncher
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.provider import fake_provider


@pytest.fixture
def launcher(client) -> FakeLauncher:
    fake = FakeLauncher()
    client.app.state.services.prompt_optimization.launcher = fake
    return fake


@pytest.fixture
def fake_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """The fake server, with every provider's base URL pointed at it (SWITCHBOARD_LLM_API_BASE)."""
    with fake_provider(monkeypatch, retries=2) as fake:
        yield fake


@pytest.fixture
def optimizer_headers(auth) -> Callable[..., dict[str, str]]:
    def make(user: str = "bob", tier: str = "starter") -> dict[str, str]:
        return auth(user, tier=tier, prompt_optimization=True)

    return make
