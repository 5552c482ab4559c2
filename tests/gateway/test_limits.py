"""/v1 under the API's own limits, in process: the per-key rate limit (modelSelect's bucket) and the body bound,
answered in OpenAI's error shape."""

from __future__ import annotations

from api.rate_limit import JOBS, SELECT, Limit, RateLimiter

CHAT = "/v1/chat/completions"
BODY = {"model": "switchboard", "messages": [{"role": "user", "content": "hi"}]}  # 400 no_candidates: never called


def openai_error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["message"] and "param" in error and error["type"]
    assert error["request_id"] == response.headers["x-request-id"]
    return error


def test_chat_completions_draw_on_the_select_bucket(client, auth):
    client.app.state.services.authenticator.rate_limiter = RateLimiter({JOBS: Limit(60, 1), SELECT: Limit(60, 2)})
    alice = auth("alice")
    assert [client.post(CHAT, json=BODY, headers=alice).status_code for _ in range(2)] == [400, 400]
    refused = client.post(CHAT, json=BODY, headers=alice)
    openai_error(refused, 429, "rate_limited")
    assert int(refused.headers["Retry-After"]) >= 1
    assert client.get("/v1/models", headers=alice).status_code == 200  # the model list is a `jobs` request


def test_a_body_over_the_limit_is_a_413_in_openai_shape(client, auth):
    limit = client.app.state.services.settings.max_body_bytes
    big = {**BODY, "messages": [{"role": "user", "content": "x" * (limit + 10)}]}
    error = openai_error(client.post(CHAT, json=big, headers=auth("alice")), 413, "payload_too_large")
    assert f"{limit:,}" in error["message"]


def test_a_preference_of_another_key_is_not_listed_nor_usable(client, auth):
    bob = auth("bob")
    theirs = client.post("/v2/preferences/userPreferenceCreate", json={"name": "b"}, headers=bob).json()
    alice = auth("alice")
    assert [m["id"] for m in client.get("/v1/models", headers=alice).json()["data"]] == ["switchboard"]
    body = {**BODY, "model": f"switchboard/{theirs['preference_id']}", "llm_providers": ["openai/gpt-4o"]}
    openai_error(client.post(CHAT, json=body, headers=alice), 404, "preference_not_found")
