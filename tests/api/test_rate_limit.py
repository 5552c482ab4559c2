"""Per-key rate limits: the token bucket itself (with a fake clock), the settings, and 429 through the real app."""

from __future__ import annotations

import uuid

import pytest
from litestar.testing import TestClient

from api.auth_cache import AuthCache, Freshness
from api.client_address import client_address, parse_networks
from api.errors import TooManyRequests
from api.rate_limit import JOBS, KEY_LOOKUP, SELECT, Limit, RateLimiter
from api.settings import get_settings, reset_settings
from storage.keys import hash_key
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


class Clock:
    """A monotonic clock the test moves by hand: no test here waits for real time to pass."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clocked(client):
    """The app's authenticator with a fake clock: 30 s auth cache, 5 s for unknown keys, 3 look-ups a minute per
    client address (burst 3)."""
    clock = Clock()
    authenticator = client.app.state.services.authenticator
    authenticator.cache = AuthCache(30.0, negative_ttl_seconds=5.0, clock=clock)
    authenticator.rate_limiter = RateLimiter({KEY_LOOKUP: Limit(3, 3)}, clock=clock)
    return clock, authenticator


def flood(client, n: int, headers: dict[str, str] | None = None) -> list[int]:
    return [client.post(SELECT_PATH, json=SELECT_BODY, headers={"Authorization": f"Bearer sb-random-{uuid.uuid4()}",
                                                                **(headers or {})}).status_code for _ in range(n)]


def test_a_random_key_flood_never_locks_out_a_key_the_worker_has_seen_work(client, auth, clocked):
    clock, authenticator = clocked
    alice = auth("alice")
    assert client.post(SELECT_PATH, json=SELECT_BODY, headers=alice).status_code == 200  # one look-up: cached
    clock.now += 31  # the cached entry is past its TTL: stale
    statuses = flood(client, 10)
    assert statuses[:3] == [401] * 3 and set(statuses[3:]) == {429}  # the address's look-up budget is spent
    # alice's key is stale, yet known: served at once, looked up again in the background, never limited.
    for _ in range(5):
        assert client.post(SELECT_PATH, json=SELECT_BODY, headers=alice).status_code == 200
    client.blocking_portal.call(authenticator.settled)
    assert authenticator.cache.lookup(hash_key(alice["Authorization"].removeprefix("Bearer ")))[0] is Freshness.FRESH
    clock.now += 120  # minutes of flood later, still served
    assert set(flood(client, 5)) == {401, 429}
    assert client.post(SELECT_PATH, json=SELECT_BODY, headers=alice).status_code == 200


def test_a_stale_key_that_was_revoked_is_refused_once_it_is_looked_up_again(client, issue_key, clocked):
    clock, authenticator = clocked
    issued = issue_key("bob")
    headers, key_hash = {"Authorization": f"Bearer {issued.key}"}, hash_key(issued.key)
    assert client.post(SELECT_PATH, json=SELECT_BODY, headers=headers).status_code == 200
    user = authenticator.cache.lookup(key_hash)[1]
    client.app.state.services.store.accounts.revoke_key(issued.info.key_id)
    authenticator.cache.put(key_hash, user)  # as if the change feed had missed the revocation
    clock.now += 31
    assert client.post(SELECT_PATH, json=SELECT_BODY, headers=headers).status_code == 200  # stale: served...
    client.blocking_portal.call(authenticator.settled)  # ...while it is looked up again
    assert client.post(SELECT_PATH, json=SELECT_BODY, headers=headers).status_code == 401


def test_unknown_keys_never_push_known_ones_out_of_the_cache():
    clock = Clock()
    cache = AuthCache(30.0, max_entries=10, max_unknown=10, clock=clock)
    cache.put("known", "a user")  # type: ignore[arg-type]
    for i in range(10_000):
        cache.put(f"random-{i}", None)
    assert cache.lookup("known") == (Freshness.FRESH, "a user")
    assert len(cache._unknown) == 10 and cache.lookup("random-9999")[0] is Freshness.FRESH
    clock.now += 31
    assert cache.lookup("known") == (Freshness.STALE, "a user") and cache.lookup("random-9999")[0] is Freshness.MISS
    cache.expire_all()  # after a gap in the change feed: looked up again, still served meanwhile
    assert cache.lookup("known")[0] is Freshness.STALE


def test_the_client_behind_a_trusted_proxy_is_the_hop_it_appended():
    proxies = parse_networks(["10.0.0.0/8"])

    def seen(peer: str, forwarded: bytes | None) -> str:
        headers = [(b"x-forwarded-for", forwarded)] if forwarded is not None else []
        return client_address({"client": (peer, 1), "headers": headers}, proxies)

    assert seen("10.0.0.2", b"6.6.6.6, 203.0.113.9") == "203.0.113.9"  # what the caller wrote first is ignored
    assert seen("10.0.0.2", b"203.0.113.9, 10.0.0.3") == "203.0.113.9"  # a chain of trusted proxies is skipped
    assert seen("198.51.100.1", b"203.0.113.9") == "198.51.100.1"  # not from a trusted proxy: header ignored
    assert seen("10.0.0.2", None) == "10.0.0.2"
    assert client_address({"client": ("10.0.0.2", 1), "headers": [(b"x-forwarded-for", b"203.0.113.9")]}) == \
        "10.0.0.2"  # no trusted proxies configured (the default): the header is never read


def test_behind_a_trusted_proxy_a_flood_spends_only_its_own_address_budget(client, issue_key, clocked):
    clock, authenticator = clocked
    authenticator.trusted_proxies = parse_networks(["10.0.0.0/8"])
    app = client.app

    async def behind_proxy(scope, receive, send):  # every request arrives from the proxy's address
        await app({**scope, "client": ("10.0.0.2", 40000)} if scope["type"] == "http" else scope, receive, send)

    proxied = TestClient(behind_proxy, raise_server_exceptions=False)
    attacker = {"x-forwarded-for": "198.51.100.66"}
    statuses = [proxied.post(SELECT_PATH, json=SELECT_BODY, headers={"Authorization": f"Bearer sb-x{i}", **attacker})
                .status_code for i in range(8)]
    assert statuses[:3] == [401] * 3 and set(statuses[3:]) == {429}
    carol = {"Authorization": f"Bearer {issue_key('carol').key}", "x-forwarded-for": "203.0.113.9"}
    assert proxied.post(SELECT_PATH, json=SELECT_BODY, headers=carol).status_code == 200  # never seen, not limited


def test_trusted_proxies_come_from_the_environment_and_a_typo_stops_start_up(data_dir, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_TRUSTED_PROXIES", "10.0.0.0/8, ::1")
    reset_settings()
    assert get_settings().trusted_proxies == ("10.0.0.0/8", "::1")
    monkeypatch.setenv("SWITCHBOARD_TRUSTED_PROXIES", "10.0.0.0/8, proxy.local")
    reset_settings()
    with pytest.raises(SystemExit, match="SWITCHBOARD_TRUSTED_PROXIES: 'proxy.local' is not an IP address"):
        get_settings()
