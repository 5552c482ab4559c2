"""Per-key rate limits: the token bucket itself (with a fake clock), the settings, and 429 through the real app."""

from __future__ import annotations

import pytest

from api.errors import TooManyRequests
from api.rate_limit import JOBS, SELECT, Limit, RateLimiter
from api.settings import get_settings, reset_settings
from tests.support.envelopes import assert_envelope

CREATE = "/v2/preferences/userPreferenceCreate"
SELECT_PATH = "/v2/modelRouter/modelSelect"
SELECT_BODY = {"messages": [{"role": "user", "content": "What is 2+2?"}],
               "llm_providers": [{"provider": "openai", "model": "gpt-4o-mini"},
                                 {"provider": "openai", "model": "gpt-4o"}]}


def test_bucket_allows_the_burst_then_refuses_with_retry_after_and_refills():
    limiter = RateLimiter({JOBS: Limit(per_minute=60, burst=3)})  # one token a second
    for _ in range(3):
        limiter.check("k1", JOBS, now=100.0)
    with pytest.raises(TooManyRequests) as refused:
        limiter.check("k1", JOBS, now=100.0)
    assert refused.value.status == 429 and refused.value.code == "RATE_LIMITED"
    assert refused.value.headers == {"Retry-After": "1"}
    assert refused.value.details["limit_per_minute"] == 60
    limiter.check("k2", JOBS, now=100.0)  # another key has its own bucket
    limiter.check("k1", JOBS, now=101.0)  # one second later one token is back
    with pytest.raises(TooManyRequests):
        limiter.check("k1", JOBS, now=101.5)
    for _ in range(3):  # a long pause refills up to the burst, never beyond it
        limiter.check("k1", JOBS, now=1000.0)
    with pytest.raises(TooManyRequests):
        limiter.check("k1", JOBS, now=1000.0)


def test_retry_after_rounds_up_to_whole_seconds_at_slow_rates():
    limiter = RateLimiter({JOBS: Limit(per_minute=2, burst=1)})  # a token every 30 s
    limiter.check("k", JOBS, now=0.0)
    with pytest.raises(TooManyRequests) as refused:
        limiter.check("k", JOBS, now=10.0)
    assert refused.value.headers["Retry-After"] == "20"


def test_zero_per_minute_turns_a_class_off_and_classes_are_separate():
    limiter = RateLimiter({SELECT: Limit(0, 1), JOBS: Limit(60, 1)})
    for _ in range(1000):
        limiter.check("k", SELECT, now=0.0)
    limiter.check("k", JOBS, now=0.0)
    with pytest.raises(TooManyRequests):
        limiter.check("k", JOBS, now=0.0)
    assert RateLimiter.class_of("modelSelect") == SELECT and RateLimiter.class_of("reportFeedback") == SELECT
    assert RateLimiter.class_of("optimize") == JOBS and RateLimiter.class_of(None) == JOBS


def test_bucket_table_is_bounded():
    limiter = RateLimiter({JOBS: Limit(60, 1)}, max_keys=100)
    for i in range(1000):
        limiter.check(f"key-{i}", JOBS, now=0.0)
    assert len(limiter._buckets) <= 100


def test_settings_read_the_environment(data_dir, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_RATE_LIMIT_PER_MINUTE", "30")
    monkeypatch.setenv("SWITCHBOARD_RATE_LIMIT_BURST", "5")
    monkeypatch.setenv("SWITCHBOARD_SELECT_RATE_LIMIT_PER_MINUTE", "0")
    reset_settings()
    s = get_settings()
    assert (s.rate_limit_per_minute, s.rate_limit_burst, s.select_rate_limit_per_minute) == (30, 5, 0)
    monkeypatch.setenv("SWITCHBOARD_RATE_LIMIT_BURST", "lots")
    reset_settings()
    with pytest.raises(SystemExit, match="SWITCHBOARD_RATE_LIMIT_BURST"):
        get_settings()


def test_app_builds_its_limiter_from_settings(client):
    limiter = client.app.state.services.authenticator.rate_limiter
    settings = client.app.state.services.settings
    assert limiter.limits[JOBS] == Limit(settings.rate_limit_per_minute, settings.rate_limit_burst)
    assert limiter.limits[SELECT].per_minute == settings.select_rate_limit_per_minute > settings.rate_limit_per_minute


def test_http_429_envelope_with_retry_after_per_key_and_per_class(client, auth):
    client.app.state.services.authenticator.rate_limiter = RateLimiter({JOBS: Limit(60, 2), SELECT: Limit(60, 3)})
    alice, bob = auth("alice"), auth("bob")
    assert [client.post(CREATE, json={}, headers=alice).status_code for _ in range(2)] == [200, 200]
    refused = client.post(CREATE, json={}, headers=alice)
    error = assert_envelope(refused, 429, "RATE_LIMITED", "rate_limit_error")
    assert int(refused.headers["Retry-After"]) >= 1
    assert "retry after" in error["message"] and error["details"]["class"] == JOBS
    assert client.post(CREATE, json={}, headers=bob).status_code == 200  # bob's key is not alice's
    # modelSelect draws on its own bucket: alice's exhausted job bucket does not block routing.
    assert [client.post(SELECT_PATH, json=SELECT_BODY, headers=alice).status_code for _ in range(3)] == [200] * 3
    assert_envelope(client.post(SELECT_PATH, json=SELECT_BODY, headers=alice), 429, "RATE_LIMITED",
                    "rate_limit_error")


def test_unauthenticated_requests_do_not_touch_buckets(client):
    limiter = RateLimiter({JOBS: Limit(60, 1)})
    client.app.state.services.authenticator.rate_limiter = limiter
    for _ in range(5):
        assert client.post(CREATE, json={}, headers={"Authorization": "Bearer sb-nobody"}).status_code == 401
    assert limiter._buckets == {}


def test_every_secured_operation_documents_429(client):
    doc = client.get("/schema/openapi.json").json()
    for item in doc["paths"].values():
        for operation in item.values():
            if operation.get("security"):
                assert "429" in operation["responses"], operation["operationId"]
            else:
                assert "429" not in operation["responses"], operation["operationId"]
