"""Issue 31, item 11: one user's calls changed another user's `tradeoff: "latency"` choice, because the latency the
gateway observed was one figure for everyone. It is kept per organization (api/selection/latency.py): the app in
process, its gateway calling the in-process fake provider."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from api.settings import reset_settings
from tests.support.fakes.openai_server import FakeOpenAI

ASK = [{"role": "user", "content": "Name a prime number."}]


def custom(model: str, latency: float, price: float) -> dict:
    return {"provider": "acme", "model": model, "is_custom": True, "context_length": 128000, "input_price": price,
            "output_price": price, "latency": latency}


FAST_DECLARED, SLOW_DECLARED = custom("lat-a", 0.5, 1.0), custom("lat-b", 5.0, 2.0)  # lat-b answers in ms
BOTH = {"llm_providers": [FAST_DECLARED, SLOW_DECLARED], "tradeoff": "latency"}


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """Every provider served by the fake. Request it before `client`."""
    fake = FakeOpenAI().start()
    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", fake.base_url)
    reset_settings()
    yield fake
    fake.stop()


def answered_by(client, headers: dict[str, str], extra: dict) -> str:
    r = client.post("/v1/chat/completions", headers=headers, json={"model": "switchboard", "messages": ASK, **extra})
    assert r.status_code == 200, r.text
    return r.json()["model"]


def test_one_organizations_calls_do_not_move_anothers_latency_choice(provider, client, auth):
    client.app.state.services.authenticator.rate_limiter = None
    alice, mallory = auth("alice", organization_id="org-a"), auth("mallory", organization_id="org-m")
    assert answered_by(client, alice, BOTH) == "acme/lat-a"  # the declared figures: lat-a is faster
    for _ in range(10):  # ObservedLatency's min_calls: mallory's organization observes lat-b answering in ms
        answered_by(client, mallory, {"llm_providers": [SLOW_DECLARED]})
    assert answered_by(client, mallory, BOTH) == "acme/lat-b"  # her own organization learnt from its calls
    assert answered_by(client, alice, BOTH) == "acme/lat-a"  # alice's did not: a figure shared moved this
