"""The hot endpoints answer without Litestar's per-request machinery (docs/architecture.md, "The lean path of a hot
endpoint"): no kwargs extraction, no dependency resolution, no signature model. A change that puts modelSelect back
on that path (a new parameter, a dependency, a dropped hook) costs about a third of its CPU and fails here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar._kwargs.kwargs_model import KwargsModel
from litestar._signature.model import SignatureModel
from litestar.testing import TestClient

from api.settings import reset_settings
from tests.support.envelopes import assert_validation_body
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.routes import SELECT

PROVIDERS = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]
ASK = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Per route path: how many times Litestar extracted kwargs, resolved dependencies or built a signature model."""
    seen: Counter = Counter()
    to_kwargs, resolve = KwargsModel.to_kwargs, KwargsModel.resolve_dependencies
    parse = SignatureModel.parse_values_from_connection_kwargs.__func__  # type: ignore[attr-defined]

    async def counted_to_kwargs(self, connection):
        seen[connection.scope["path"]] += 1
        return await to_kwargs(self, connection)

    async def counted_resolve(self, connection, kwargs):
        seen[connection.scope["path"]] += 1
        return await resolve(self, connection, kwargs)

    def counted_parse(cls, connection, kwargs):
        seen[connection.scope["path"]] += 1
        return parse(cls, connection, kwargs)

    monkeypatch.setattr(KwargsModel, "to_kwargs", counted_to_kwargs)
    monkeypatch.setattr(KwargsModel, "resolve_dependencies", counted_resolve)
    monkeypatch.setattr(SignatureModel, "parse_values_from_connection_kwargs", classmethod(counted_parse))
    return seen


@pytest.fixture(scope="module")
def upstream() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def gateway_client(data_dir: Path, monkeypatch: pytest.MonkeyPatch, upstream: FakeOpenAI) -> Iterator[TestClient]:
    from api.app import create_app

    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", upstream.base_url)
    monkeypatch.setenv("SWITCHBOARD_LLM_API_KEY", "sk-upstream-secret-0123456789")
    reset_settings()
    with TestClient(create_app(publish_owner=False)) as client:
        yield client


@pytest.mark.parametrize("query", ["", "?type=openrouter"])
def test_model_select_resolves_no_dependency_or_signature_model(client, auth, resolved, query):
    headers = auth("alice")
    body = {"messages": ASK, "llm_providers": PROVIDERS}
    if query:
        body["llm_providers"] = [{"model": "openai/gpt-4o"}, {"model": "openai/gpt-4o-mini"}]
    for _ in range(3):
        answer = client.post(SELECT + query, json=body, headers=headers)
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-request-id"]
    assert resolved[SELECT] == 0


def test_a_candidate_without_evidence_keeps_its_header_on_the_lean_path(client, auth, resolved):
    body = {"messages": ASK, "llm_providers": [*PROVIDERS, {"provider": "acme", "model": "m1", "is_custom": True,
                                                            "context_length": 8192, "input_price": 1.0,
                                                            "output_price": 2.0, "latency": 0.5}]}
    answer = client.post(SELECT, json=body, headers=auth("alice"))
    assert answer.status_code == 200, answer.text
    assert "acme/m1" in answer.headers.get("x-switchboard-no-evidence", "")
    assert resolved[SELECT] == 0


def test_a_malformed_body_takes_the_declared_path_and_its_422(client, auth, resolved):
    # Also shows the counters see what they count: the declared handler does resolve its parameters.
    answer = client.post(SELECT, json={"messages": ASK, "llm_providers": PROVIDERS, "hash_content": "yes"},
                         headers=auth("alice"))
    assert assert_validation_body(answer)[0]["loc"] == ["body", "hash_content"]
    unauthorised = client.post(SELECT, json={"messages": ASK, "llm_providers": PROVIDERS},
                               headers={"Authorization": "Bearer sb-not-a-key"})
    assert unauthorised.status_code == 401
    assert resolved[SELECT] >= 1


@pytest.mark.xfail(strict=True, reason="the gateway's request path was another helper's area in session 5 "
                                       "(/v1/messages, deployments); its lean path is still to come (issue 36)")
def test_chat_completions_resolves_no_dependency_or_signature_model(gateway_client, resolved):
    key = gateway_client.app.state.services.store.accounts.issue_key("alice").key
    answer = gateway_client.post("/v1/chat/completions", json={"model": "openai/gpt-4o-mini", "messages": ASK},
                                 headers={"Authorization": f"Bearer {key}"})
    assert answer.status_code == 200, answer.text
    assert resolved["/v1/chat/completions"] == 0
