"""The hot endpoints answer without Litestar's per-request machinery (docs/architecture.md, "The lean path of a hot
endpoint"): no kwargs extraction, no dependency resolution, no signature model. A change that puts modelSelect,
/v1/chat/completions or /v1/messages back on that path (a new parameter, a dependency, a dropped hook) costs them
(modelSelect about a third of its CPU) and fails here."""

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


def _key(client: TestClient) -> dict[str, str]:
    return {"Authorization": f"Bearer {client.app.state.services.store.accounts.issue_key('alice').key}"}


@pytest.mark.parametrize("stream", [False, True])
def test_chat_completions_resolves_no_dependency_or_signature_model(gateway_client, resolved, stream):
    headers = _key(gateway_client)
    routed = {"model": "switchboard", "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"]}
    for named in ({"model": "openai/gpt-4o-mini"}, routed):  # proxied and routed
        answer = gateway_client.post("/v1/chat/completions", headers=headers,
                                     json={**named, "messages": ASK, "stream": stream})
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-request-id"] and answer.headers["x-switchboard-session-id"]
        assert ("data: [DONE]" in answer.text) if stream else answer.json()["choices"][0]["message"]["content"]
    assert resolved["/v1/chat/completions"] == 0


@pytest.mark.parametrize("stream", [False, True])
def test_messages_resolves_no_dependency_or_signature_model(gateway_client, resolved, stream):
    answer = gateway_client.post("/v1/messages", headers=_key(gateway_client),
                                 json={"model": "switchboard", "max_tokens": 64, "messages": ASK, "stream": stream,
                                       "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"]})
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-request-id"]
    assert ("event: message_stop" in answer.text) if stream else answer.json()["type"] == "message"
    assert resolved["/v1/messages"] == 0


def test_gateway_errors_keep_their_shapes_on_both_paths(gateway_client, resolved):
    # On the lean path (a JSON object): the key is checked before the body's fields, each route in its own shape.
    unknown = {"Authorization": "Bearer sb-not-a-key"}
    refused = gateway_client.post("/v1/chat/completions", json={"messages": ASK}, headers=unknown)
    assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
    refused = gateway_client.post("/v1/messages", json={"messages": ASK}, headers=unknown)
    assert refused.status_code == 401 and refused.json()["type"] == "error"
    no_max = gateway_client.post("/v1/messages", json={"model": "switchboard", "messages": ASK},
                                 headers=_key(gateway_client))
    assert no_max.status_code == 400 and "max_tokens" in no_max.json()["error"]["message"]
    assert resolved["/v1/chat/completions"] == resolved["/v1/messages"] == 0
    # Not a JSON object: handed back to the declared handler, whose checks and envelopes answer it in their order
    # (undecodable JSON, then the key, then the body's type).
    json_type = {"content-type": "application/json"}
    for path in ("/v1/chat/completions", "/v1/messages"):
        broken = gateway_client.post(path, content=b"{", headers={**unknown, **json_type})
        assert broken.status_code == 400 and broken.json()["error"]["code"] == "invalid_json", broken.text
        listed = gateway_client.post(path, content=b"[1, 2]", headers={**unknown, **json_type})
        assert listed.status_code == 401, listed.text
        listed = gateway_client.post(path, content=b"[1, 2]", headers={**_key(gateway_client), **json_type})
        assert listed.status_code == 400 and listed.json()["error"]["type"] == "invalid_request_error", listed.text
        assert resolved[path] >= 3
