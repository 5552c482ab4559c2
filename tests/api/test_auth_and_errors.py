"""Authentication, the error envelope, request ids, validation errors, the body-size cap and the internal RPC
guard, all through the real ASGI app with a real DuckDB file in a temp data dir."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.settings import reset_settings
from storage.keys import hash_key
from tests.support.envelopes import assert_envelope, assert_validation_body

CREATE = "/v2/preferences/userPreferenceCreate"
UPDATE = "/v2/preferences/userPreferenceUpdate"
DELETE = "/v2/preferences/userPreferenceDelete/{}"


def preference_count(client: TestClient) -> int:
    return client.app.state.services.store.database.rows("SELECT count(*) FROM preferences")[0][0]


# --- authentication -------------------------------------------------------------------------------


@pytest.mark.parametrize("headers, message_part", [
    ({}, "missing Authorization"),
    ({"Authorization": ""}, "missing Authorization"),
    ({"Authorization": "Basic YWxpY2U6c2VjcmV0"}, "malformed"),
    ({"Authorization": "Bearer"}, "malformed"),
    ({"Authorization": "Bearer    "}, "malformed"),
    ({"Authorization": "Token sb-abc"}, "malformed"),
    ({"Authorization": "sb-only-the-key"}, "malformed"),
    ({"Authorization": "Bearer sb-not-a-real-key"}, "invalid or revoked"),
])
def test_bad_credentials_get_the_401_envelope(client, headers, message_part):
    response = client.post(CREATE, json={"name": "x"}, headers=headers)
    error = assert_envelope(response, 401, "UNAUTHORIZED", "authentication_error")
    assert message_part in error["message"]
    assert preference_count(client) == 0  # nothing was stored on behalf of nobody


@pytest.mark.parametrize("method, path, body", [
    ("post", CREATE, {}),
    ("put", UPDATE, {"preference_id": "00000000-0000-0000-0000-000000000000"}),
    ("delete", DELETE.format("00000000-0000-0000-0000-000000000000"), None),
])
def test_every_preference_endpoint_requires_a_key(client, method, path, body):
    kwargs = {"json": body} if body is not None else {}
    response = getattr(client, method)(path, **kwargs)
    assert_envelope(response, 401, "UNAUTHORIZED", "authentication_error")


def test_auth_is_checked_before_the_body_is_judged(client):
    # A caller without a key learns nothing about the body schema.
    response = client.put(UPDATE, json={"cost_quality_tradeoff": "not a number"})
    assert_envelope(response, 401, "UNAUTHORIZED", "authentication_error")


def test_a_valid_key_authenticates_and_the_scheme_is_case_insensitive(client, issue_key):
    key = issue_key("alice").key
    for scheme in ("Bearer", "bearer", "BEARER"):
        response = client.post(CREATE, json={"name": scheme}, headers={"Authorization": f"{scheme} {key}"})
        assert response.status_code == 200, response.text
    store = client.app.state.services.store
    assert sorted(p.name for p in store.preferences.for_user("alice")) == ["BEARER", "Bearer", "bearer"]


def test_a_key_revoked_before_use_is_rejected(client, issue_key):
    issued = issue_key("alice")
    client.app.state.services.store.accounts.revoke_key(issued.info.key_id)
    response = client.post(CREATE, json={}, headers={"Authorization": f"Bearer {issued.key}"})
    error = assert_envelope(response, 401, "UNAUTHORIZED", "authentication_error")
    assert "revoked" in error["message"]


def test_revoking_one_key_leaves_the_users_other_keys_working(client, issue_key):
    first, second = issue_key("alice"), issue_key("alice")
    client.app.state.services.store.accounts.revoke_key(first.info.key_id)
    assert client.post(CREATE, json={}, headers={"Authorization": f"Bearer {first.key}"}).status_code == 401
    assert client.post(CREATE, json={}, headers={"Authorization": f"Bearer {second.key}"}).status_code == 200


def test_models_needs_no_auth_and_ignores_a_bad_key(client):
    assert client.get("/v2/models").status_code == 200
    assert client.get("/v2/models", headers={"Authorization": "Bearer sb-garbage"}).status_code == 200


def test_401_names_the_bearer_scheme_in_www_authenticate(client):
    # RFC 6750 section 3: a bearer-protected resource MUST send WWW-Authenticate with its 401s.
    for headers in ({}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer sb-unknown"}):
        response = client.post(CREATE, json={}, headers=headers)
        assert response.status_code == 401
        assert response.headers.get("www-authenticate", "").lower().startswith("bearer")
    # Other errors do not challenge.
    assert "www-authenticate" not in client.get("/v2/no/such/route").headers


# --- revocation through the owner RPC (what `switchboard keys revoke` uses while the API runs) --------


def rpc(client: TestClient, method: str, body: dict | None = None, token: str | None = None):
    token = client.app.state.services.rpc_token if token is None else token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(f"/internal/rpc/{method}", json=body or {}, headers=headers)


def test_revocation_via_rpc_takes_effect_at_once_despite_the_auth_cache(client, issue_key):
    issued = issue_key("alice")
    headers = {"Authorization": f"Bearer {issued.key}"}
    assert client.post(CREATE, json={}, headers=headers).status_code == 200  # the user is now cached
    services = client.app.state.services
    assert services.authenticator.cache.get(hash_key(issued.key))[0]  # proves the cache is warm (30 s TTL)

    response = rpc(client, "accounts.revoke_key", {"key_ref": issued.info.key_prefix})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["key_id"] == issued.info.key_id and body["revoked_at"] is not None

    error = assert_envelope(client.post(CREATE, json={}, headers=headers), 401, "UNAUTHORIZED",
                            "authentication_error")
    assert "revoked" in error["message"]
    assert len(services.store.preferences.for_user("alice")) == 1


def test_rpc_without_or_with_a_wrong_token_is_401(client):
    for token in ("", "not-the-token", "Bearer"):
        error = assert_envelope(rpc(client, "accounts.list_keys", token=token), 401, "UNAUTHORIZED",
                                "authentication_error")
        assert "owner token" in error["message"]
    # An ordinary API key is not the owner token either.
    key = client.app.state.services.store.accounts.issue_key("alice").key
    assert rpc(client, "accounts.list_keys", token=key).status_code == 401
    # A refused revoke changes nothing.
    assert rpc(client, "accounts.revoke_key", {"key_ref": key}, token="nope").status_code == 401
    assert client.app.state.services.store.accounts.user_for_key(hash_key(key)) is not None


def test_rpc_unknown_method_is_404_and_private_methods_are_not_reachable(client):
    for method in ("no_such_method", "_run", "_rows", "close"):
        error = assert_envelope(rpc(client, method), 404, "NOT_FOUND", "not_found_error")
        assert method in error["message"]


def test_rpc_store_errors_and_bad_arguments_are_400(client):
    error = assert_envelope(rpc(client, "accounts.revoke_key", {"key_ref": "nothing-like-it"}), 400, "BAD_REQUEST",
                            "invalid_request_error")
    assert "no API key matches" in error["message"]
    error = assert_envelope(rpc(client, "accounts.revoke_key", {}), 400, "BAD_REQUEST", "invalid_request_error")
    assert "key_ref" in error["message"]


def test_rpc_round_trips_a_typed_call(client):
    response = rpc(client, "accounts.issue_key", {"user_id": "carol", "tier": "starter"})
    assert response.status_code == 200, response.text
    issued = response.json()
    assert issued["user"]["tier"] == "starter" and issued["key"].startswith("sb-")
    assert client.post(CREATE, json={}, headers={"Authorization": f"Bearer {issued['key']}"}).status_code == 200


def test_internal_health_needs_no_auth(client):
    response = client.get("/internal/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response.headers["x-request-id"]


# --- request ids ----------------------------------------------------------------------------------


def test_every_response_carries_a_request_id(client, auth):
    h = auth()
    responses = {
        "200 models": client.get("/v2/models"),
        "200 create": client.post(CREATE, json={}, headers=h),
        "401": client.post(CREATE, json={}),
        "404 route": client.get("/v2/no/such/route"),
        "404 preference": client.delete(DELETE.format("00000000-0000-0000-0000-000000000000"), headers=h),
        "405": client.delete("/v2/models"),
        "422": client.put(UPDATE, json={"preference_id": 5}, headers=h),
    }
    ids = set()
    for label, response in responses.items():
        rid = response.headers.get("x-request-id")
        assert rid, label
        ids.add(rid)
    assert len(ids) == len(responses)  # minted fresh per request


def test_unknown_route_and_wrong_method_use_the_envelope(client):
    error = assert_envelope(client.get("/v2/no/such/route"), 404, "NOT_FOUND", "not_found_error")
    assert "/v2/no/such/route" in error["message"]
    assert_envelope(client.delete("/v2/models"), 405, "METHOD_NOT_ALLOWED", "invalid_request_error")
    assert_envelope(client.get(CREATE), 405, "METHOD_NOT_ALLOWED", "invalid_request_error")


@pytest.mark.parametrize("incoming", ["abc-123", "req_2024.01:xyz", "A" * 128,
                                      "3f2b8c1e-0c1d-4d6f-9f59-0d3b2b5a7e11"])
def test_a_safe_incoming_request_id_is_echoed(client, incoming):
    response = client.post(CREATE, json={}, headers={"x-request-id": incoming})
    assert response.headers["x-request-id"] == incoming
    assert response.json()["error"]["request_id"] == incoming
    assert client.get("/v2/models", headers={"X-Request-ID": incoming}).headers["x-request-id"] == incoming


@pytest.mark.parametrize("incoming", ["has spaces in it", "A" * 500, "A" * 129, "semi;colon", "quote\"d",
                                      "new\\nline", "<script>"])
def test_an_unsafe_incoming_request_id_is_replaced(client, incoming):
    response = client.post(CREATE, json={}, headers={"x-request-id": incoming})
    rid = response.headers["x-request-id"]
    assert rid and rid != incoming
    assert len(rid) <= 128 and rid.replace("-", "").isalnum()
    assert response.json()["error"]["request_id"] == rid
    assert len(response.headers.get_list("x-request-id")) == 1


# --- 422 validation errors ------------------------------------------------------------------------


def test_wrong_types_are_422_with_a_field_loc(client, auth):
    h = auth()
    items = assert_validation_body(client.post(CREATE, json={"name": 5}, headers=h))
    assert items[0]["loc"] == ["body", "name"]
    assert "str" in items[0]["msg"]
    pid = client.post(CREATE, json={}, headers=h).json()["preference_id"]
    items = assert_validation_body(client.put(UPDATE, json={"preference_id": pid, "max_model_depth": "deep"},
                                              headers=h))
    assert items[0]["loc"] == ["body", "max_model_depth"]
    assert client.app.state.services.store.preferences.get("alice", pid).max_model_depth is None


@pytest.mark.parametrize("raw", [b"{bad", b'{"name": }', b"{'name': 'single quotes'}", b'{"name": "x"',
                                 b"\xff\xfe"])
def test_malformed_json_is_422(client, auth, raw):
    h = {**auth(), "content-type": "application/json"}
    items = assert_validation_body(client.post(CREATE, content=raw, headers=h))
    assert items[0]["loc"] == ["body"]
    assert "JSON" in items[0]["msg"] or "json" in items[0]["type"]
    assert preference_count(client) == 0


def test_a_body_of_the_wrong_json_type_is_422(client, auth):
    h = auth()
    for body in ([1, 2], "a string", 3, None):
        response = client.put(UPDATE, json=body, headers=h) if body is not None else \
            client.put(UPDATE, content=b"null", headers={**h, "content-type": "application/json"})
        items = assert_validation_body(response)
        assert items[0]["loc"][0] == "body"
        assert "object" in items[0]["msg"]


def test_missing_required_field_is_422_naming_the_field(client, auth):
    items = assert_validation_body(client.put(UPDATE, json={"name": "no id"}, headers=auth()))
    assert items[0]["loc"][0] == "body"
    assert "preference_id" in items[0]["msg"]


def test_validation_locs_never_leak_the_handler_parameter_name(client, auth):
    # Litestar calls the body parameter `data`; callers must see the field (FastAPI-style loc) instead.
    h = auth()
    items = assert_validation_body(client.put(UPDATE, json={"name": "no id"}, headers=h))
    assert items[0]["loc"] == ["body", "preference_id"]
    items = assert_validation_body(client.put(UPDATE, json=[1], headers=h))
    assert items[0]["loc"] == ["body"]
    pid = client.post(CREATE, json={}, headers=h).json()["preference_id"]
    items = assert_validation_body(client.put(UPDATE, json={"preference_id": pid, "tradeoff": "speed"}, headers=h))
    assert items[0]["loc"] == ["body", "tradeoff"]


def test_an_empty_body_gets_a_clear_message(client, auth):
    items = assert_validation_body(client.post(CREATE, headers=auth()))
    assert items[0]["loc"] == ["body"]
    assert "body" in items[0]["msg"].lower() and "required" in items[0]["msg"].lower()
    assert "data" not in items[0]["msg"]


def test_an_empty_body_is_rejected_and_nothing_is_stored(client, auth):
    assert_validation_body(client.post(CREATE, headers=auth()))
    assert preference_count(client) == 0


def test_query_parameter_of_the_wrong_type_is_422(client):
    items = assert_validation_body(client.get("/v2/models", params={"aggregator_only": "maybe"}))
    assert items[0]["loc"] == ["query", "aggregator_only"]


# --- request size cap -----------------------------------------------------------------------------


@pytest.fixture
def small_cap_client(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("SWITCHBOARD_MAX_BODY_BYTES", "512")
    reset_settings()
    from api.app import create_app

    with TestClient(create_app(publish_owner=False), raise_server_exceptions=False) as test_client:
        yield test_client


def test_a_body_over_the_cap_is_413_and_nothing_is_stored(small_cap_client):
    client = small_cap_client
    assert client.app.state.services.settings.max_body_bytes == 512
    h = {"Authorization": f"Bearer {client.app.state.services.store.accounts.issue_key('alice').key}"}
    # Valid JSON over the cap (the name itself would pass validation at 200 chars... so pad another field).
    big = {"name": "ok", "padding": "x" * 2000}
    error = assert_envelope(client.post(CREATE, json=big, headers=h), 413, "PAYLOAD_TOO_LARGE",
                            "invalid_request_error")
    assert "too large" in error["message"]
    assert preference_count(client) == 0
    # Just under the cap still works, so the cap is the thing that refused.
    assert client.post(CREATE, json={"name": "fits"}, headers=h).status_code == 200
    assert preference_count(client) == 1


def test_a_chunked_body_over_the_cap_is_413(small_cap_client):
    client = small_cap_client
    h = {"Authorization": f"Bearer {client.app.state.services.store.accounts.issue_key('alice').key}",
         "content-type": "application/json"}

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap must hold while streaming
        yield b'{"name": "ok", "padding": "'
        for _ in range(20):
            yield b"x" * 100
        yield b'"}'

    response = client.post(CREATE, content=chunks(), headers=h)
    assert_envelope(response, 413, "PAYLOAD_TOO_LARGE", "invalid_request_error")
    assert preference_count(client) == 0


def test_an_oversized_update_leaves_the_stored_preference_alone(small_cap_client):
    client = small_cap_client
    h = {"Authorization": f"Bearer {client.app.state.services.store.accounts.issue_key('alice').key}"}
    pid = client.post(CREATE, json={"name": "keep me"}, headers=h).json()["preference_id"]
    response = client.put(UPDATE, json={"preference_id": pid, "name": "y" * 1000}, headers=h)
    assert_envelope(response, 413, "PAYLOAD_TOO_LARGE", "invalid_request_error")
    assert client.app.state.services.store.preferences.get("alice", pid).name == "keep me"


# --- unexpected exceptions ------------------------------------------------------------------------


def test_an_unexpected_exception_is_a_500_envelope_without_internals(client, auth, monkeypatch, caplog):
    store = client.app.state.services.store

    def explode(*args, **kwargs):
        raise RuntimeError("secret-internal-detail at /very/private/path.py")

    monkeypatch.setattr(store.preferences, "create", explode)
    with caplog.at_level(logging.ERROR, logger="switchboard.api"):
        response = client.post(CREATE, json={"name": "boom"}, headers=auth())
    error = assert_envelope(response, 500, "INTERNAL_ERROR", "api_error")
    assert "request_id" in error["message"]
    for leak in ("Traceback", "secret-internal-detail", "RuntimeError", "private/path", 'File "'):
        assert leak not in response.text
    # ... but the operator's log has it, tagged with the same request id.
    assert "secret-internal-detail" in caplog.text
    assert error["request_id"] in caplog.text
    # The app survives: the next request is served normally.
    assert client.get("/v2/models").status_code == 200


# --- keys are stored only as hashes ---------------------------------------------------------------


def test_plaintext_keys_never_reach_the_data_dir(data_dir, caplog):
    from api.app import create_app

    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(publish_owner=False), raise_server_exceptions=False) as client:
        store = client.app.state.services.store
        issued = [store.accounts.issue_key(f"user{i}", tier="startup") for i in range(3)]
        for key in issued:
            h = {"Authorization": f"Bearer {key.key}"}
            assert client.post(CREATE, json={"name": f"pref of {key.info.user_id}"}, headers=h).status_code == 200
        revoked = rpc(client, "accounts.revoke_key", {"key_ref": issued[0].key})  # revoke by the key itself
        assert revoked.status_code == 200
        via_rpc = rpc(client, "accounts.issue_key", {"user_id": "rpcuser"}).json()["key"]
    # The app is closed: DuckDB has checkpointed and released the file.
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".duckdb" for p in files)
    blob = b"".join(p.read_bytes() for p in files)
    for key in [k.key for k in issued] + [via_rpc]:
        assert key.encode() not in blob
        assert key not in caplog.text
    # Control: the scan can see stored strings, so the absence above means something.
    assert hash_key(issued[1].key).encode() in blob
    assert b"pref of user2" in blob
