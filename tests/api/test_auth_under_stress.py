"""Authentication when the store is slow or hostile callers flood it: cached keys never wait, an unknown key waits
at most the look-up timeout and then gets a 503, look-ups are limited per client address, and a revocation made
anywhere drops the key from every worker's cache through the store's change feed."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from litestar.testing import AsyncTestClient

from api.app import create_app
from api.launcher import why_not_queued
from api.rate_limit import JOBS, KEY_LOOKUP, SELECT, Limit, RateLimiter
from storage.keys import hash_key
from storage.records import key_subject
from tests.support.envelopes import assert_envelope
from tests.support.routes import SELECT as SELECT_ROUTE

BODY = {"messages": "Name a prime number.",
        "llm_providers": [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]}


class StuckAccounts:
    """The accounts interface of a store owner that stopped answering (paused, or its host overloaded)."""

    def __init__(self, real, hang_s: float) -> None:
        self.real, self.hang_s, self.release = real, hang_s, threading.Event()

    def user_for_key(self, key_hash: str):
        self.release.wait(self.hang_s)
        return None

    def __getattr__(self, name: str):
        return getattr(self.real, name)


def test_a_stuck_store_delays_only_the_unknown_key_and_it_gets_503_in_time(data_dir):
    async def scenario() -> tuple[float, list[float], int, dict]:
        async with AsyncTestClient(create_app(publish_owner=False)) as client:
            services = client.app.state.services
            key = services.store.accounts.issue_key("alice").key
            good = {"Authorization": f"Bearer {key}"}
            assert (await client.post(SELECT_ROUTE, json=BODY, headers=good)).status_code == 200  # now cached
            authenticator = services.authenticator
            stuck = StuckAccounts(authenticator.accounts, hang_s=10)
            authenticator.accounts, authenticator.lookup_timeout_s = stuck, 0.5

            async def unknown():
                started = time.perf_counter()
                response = await client.post(SELECT_ROUTE, json=BODY, headers={"Authorization": "Bearer sb-nope"})
                return time.perf_counter() - started, response

            async def cached():
                started = time.perf_counter()
                assert (await client.post(SELECT_ROUTE, json=BODY, headers=good)).status_code == 200
                return time.perf_counter() - started

            slow = asyncio.create_task(unknown())
            await asyncio.sleep(0.05)  # the unknown key's look-up is now waiting on the stuck store
            fast = [await cached() for _ in range(10)]
            waited, response = await slow
            stuck.release.set()
            return waited, fast, response.status_code, response.json()

    waited, fast, status, body = asyncio.run(scenario())
    assert status == 503 and body["error"]["code"] == "STORE_UNAVAILABLE"
    assert waited < 3.0  # the look-up timeout (0.5 s here, 2 s by default), not the store's hang
    assert max(fast) < 0.5  # cached keys answered meanwhile: the event loop was never blocked


def test_key_lookups_are_limited_per_client_address(client, issue_key):
    client.app.state.services.authenticator.rate_limiter = RateLimiter({KEY_LOOKUP: Limit(60, 3)})
    statuses = [client.post(SELECT_ROUTE, json=BODY, headers={"Authorization": f"Bearer sb-random-{i}"}).status_code
                for i in range(6)]
    assert statuses[:3] == [401, 401, 401] and statuses[3:] == [429, 429, 429]
    error = assert_envelope(client.post(SELECT_ROUTE, json=BODY, headers={"Authorization": "Bearer sb-x"}), 429,
                            "RATE_LIMITED", "rate_limit_error")
    assert "client address" in error["message"]
    key = issue_key("alice").key  # a cached, valid key is not held back by its address's look-up budget...
    client.app.state.services.authenticator.cache.put(hash_key(key), client.app.state.services.store.accounts
                                                       .user_for_key(hash_key(key)))
    assert client.post(SELECT_ROUTE, json=BODY, headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_the_per_key_limits_still_apply_after_authentication(client, issue_key):
    client.app.state.services.authenticator.rate_limiter = RateLimiter(
        {SELECT: Limit(60, 2), JOBS: Limit(60, 2), KEY_LOOKUP: Limit(600, 100)})
    headers = {"Authorization": f"Bearer {issue_key('alice').key}"}
    assert [client.post(SELECT_ROUTE, json=BODY, headers=headers).status_code for _ in range(3)] == [200, 200, 429]


def test_unknown_keys_are_cached_briefly(client):
    cache = client.app.state.services.authenticator.cache
    assert cache.negative_ttl <= 5 and cache.ttl == 30
    cache.put("h", None)
    assert cache.get("h") == (True, None)
    assert cache._unknown["h"] - time.monotonic() <= 5.0


def test_a_revocation_reaches_the_auth_cache_through_the_change_feed(client, issue_key):
    issued = issue_key("alice")
    headers = {"Authorization": f"Bearer {issued.key}"}
    assert client.post(SELECT_ROUTE, json=BODY, headers=headers).status_code == 200
    authenticator = client.app.state.services.authenticator
    assert authenticator.cache.get(hash_key(issued.key))[0]
    # What a worker behind a store owner receives from the feed when another process revokes the key:
    authenticator.on_change(key_subject(hash_key(issued.key)))
    assert not authenticator.cache.get(hash_key(issued.key))[0]
    authenticator.on_change("some-preference-id")  # other subjects leave the cache alone
    client.app.state.services.store.accounts.revoke_key(issued.info.key_id)  # the owning process: at once
    assert client.post(SELECT_ROUTE, json=BODY, headers=headers).status_code == 401


@pytest.mark.parametrize("exc, says", [
    (type("ObjectNotFound", (Exception,), {})(None), "not registered yet"),
    (ConnectionError(), "not reachable (ConnectionError)"),
    (RuntimeError(), "RuntimeError"),
    (RuntimeError("boom at /srv/switchboard/x.py"), "RuntimeError: creating a flow run"),
    (ConnectionError("http://10.0.0.7:4200/api refused"), "not reachable (ConnectionError)"),
])
def test_a_flow_that_cannot_be_queued_is_explained_even_without_a_message(exc, says):
    reason = why_not_queued(exc, "optimize-prompt/optimize-prompt")
    assert says in reason and "None" not in reason
    assert "/srv" not in reason and "10.0.0.7" not in reason  # an exception's own text goes to the log only
