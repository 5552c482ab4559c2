"""The gateway through the real server: the bare API under granian (tests/support/service.py) with every provider
pointed at the in-process fake (tests/support/fakes/openai_server.py), called with the official `openai` client."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from storage import analytics
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi, running_api

MAX_ATTEMPTS = 3  # the default; test_attempts_are_bounded sends four candidates, so the bound shows


@pytest.fixture(scope="module")
def fake_upstream() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def gateway_api(fake_upstream: FakeOpenAI) -> Iterator[LocalApi]:
    env = {"SWITCHBOARD_LLM_API_BASE": fake_upstream.base_url,
           "SWITCHBOARD_LLM_API_KEY": "sk-upstream-secret-0123456789",
           # a provider whose server is not there: connection refused (the discard port, nothing listens)
           "SWITCHBOARD_DEADHOST_API_BASE": "http://127.0.0.1:9/v1",
           "SWITCHBOARD_GATEWAY_MAX_ATTEMPTS": str(MAX_ATTEMPTS),
           "SWITCHBOARD_GATEWAY_FIRST_BYTE_TIMEOUT_S": "1",
           "SWITCHBOARD_SESSION_FLUSH_SECONDS": "0.2"}
    with running_api(env) as api:
        yield api


@pytest.fixture
def upstream(fake_upstream: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The module's fake, with no failure injected and no calls remembered from earlier tests."""
    yield fake_upstream
    for kind in (fake_upstream.failing, fake_upstream.too_long, fake_upstream.broken_stream):
        kind.clear()
    for counts in (fake_upstream.flaky, fake_upstream.rate_limited, fake_upstream.stalled, fake_upstream.slow_stream):
        counts.clear()
    fake_upstream.calls.clear()
    fake_upstream.bodies.clear()


@pytest.fixture
def oai(gateway_api: LocalApi):
    import openai

    with openai.OpenAI(base_url=f"{gateway_api.base}/v1", api_key=gateway_api.key, max_retries=0,
                       timeout=30) as c:
        yield c


def rows(api: LocalApi, sql: str, expected: int) -> list[tuple]:
    """The rows of an analyst query once the server has flushed them (it flushes every 0.2 s here)."""
    deadline = time.monotonic() + 30
    while True:
        with analytics.connect(api.data_dir) as conn:
            found = conn.execute(sql).fetchall()
        if len(found) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.2)
