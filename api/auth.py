"""Bearer-key authentication (RFC 6750). Keys are looked up by SHA-256 hash; plaintext is never stored."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import anyio
import httpx
from litestar import Request
from litestar.openapi.spec import SecurityScheme

from api.auth_cache import AuthCache, Freshness
from api.client_address import client_address
from api.errors import ServiceUnavailable, Unauthorized
from api.rate_limit import KEY_LOOKUP, RateLimiter
from storage.errors import StoreError
from storage.interfaces import Accounts, Store
from storage.keys import hash_key
from storage.records import KEY_SUBJECT_PREFIX, User, is_key_subject

log = logging.getLogger("switchboard.api")
SECURITY_SCHEME_NAME = "BearerAuth"
SECURITY_SCHEMES = {SECURITY_SCHEME_NAME: SecurityScheme(type="http", scheme="bearer",
                                                         description="`Authorization: Bearer <API_KEY>`")}
SECURITY = [{SECURITY_SCHEME_NAME: []}]
USER_SCOPE_KEY = "switchboard.user"


ANTHROPIC_KEY_PATH = "/v1/messages"  # where Anthropic's clients send the key as `x-api-key` (their default)


def _bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header and request.url.path == ANTHROPIC_KEY_PATH and request.headers.get("x-api-key", "").strip():
        return request.headers["x-api-key"].strip()
    if not header:
        raise Unauthorized("missing Authorization header; send `Authorization: Bearer <API_KEY>`")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("malformed Authorization header; expected `Bearer <API_KEY>`")
    return token


@dataclass
class Authenticator:
    """Key -> user through the auth cache (api/auth_cache.py), then the per-key rate limit (rate_limiter None: no
    limits).

    A key not in the cache is looked up in the store, which behind a store owner is an HTTP call: it runs in a
    worker thread, never on the event loop, and gives up after `lookup_timeout_s` with a 503, so a slow or
    restarting owner delays only the callers whose keys are not cached. Those look-ups are limited per client
    address (the KEY_LOOKUP class; `trusted_proxies`: see api/client_address.py) before they are made, so random
    keys from one address cannot keep the store busy. A key this worker has seen work is never held back by that
    limit: once its cache entry is stale it is still served, and looked up again in the background; a revoked key
    leaves the cache at once through the change feed."""

    accounts: Accounts
    cache: AuthCache
    rate_limiter: RateLimiter | None = None
    lookup_timeout_s: float = 2.0
    trusted_proxies: tuple = ()  # of api.client_address.Network (Litestar's signature model reads these hints)
    _refreshing: set = field(default_factory=set)  # key hashes being looked up again
    _tasks: set = field(default_factory=set)  # their asyncio tasks

    def attach(self, store: Store) -> "Authenticator":
        """Follow the store's changes: a revoked key leaves the cache at once (within the change feed's poll on
        API workers behind a store owner); after a gap in the feed every cached key is looked up again."""
        store.subscribe(self.on_change, resync=self.cache.expire_all)
        return self

    def on_change(self, subject: str) -> None:
        if is_key_subject(subject):
            self.cache.drop(subject.removeprefix(KEY_SUBJECT_PREFIX))

    async def user_for(self, request: Request) -> User:
        """The request's user, authenticated once per request (the strict body check may ask first)."""
        known = request.scope.get(USER_SCOPE_KEY)  # type: ignore[call-overload]
        if known is not None:
            return known
        user = await self._authenticate(request)
        request.scope[USER_SCOPE_KEY] = user  # type: ignore[literal-required]
        return user

    async def _authenticate(self, request: Request) -> User:
        key_hash = hash_key(_bearer_token(request))
        freshness, user = self.cache.lookup(key_hash)
        if freshness is Freshness.STALE:
            self._refresh(key_hash)
        elif freshness is Freshness.MISS:
            if self.rate_limiter is not None:
                self.rate_limiter.check(client_address(request.scope, self.trusted_proxies), KEY_LOOKUP,
                                        who="this client address")
            user = await self._look_up(key_hash)
            self.cache.put(key_hash, user)
        if user is None:
            raise Unauthorized("invalid or revoked API key")
        if self.rate_limiter is not None:  # after authentication: unknown keys cannot fill the bucket table
            self.rate_limiter.check(key_hash, self.rate_limiter.class_of(request.route_handler.operation_id),
                                    per_minute=user.rate_limit_per_minute)
        return user

    def _refresh(self, key_hash: str) -> None:
        """Look a known key up again in the background, once at a time per key."""
        if key_hash in self._refreshing:
            return
        self._refreshing.add(key_hash)
        task = asyncio.get_running_loop().create_task(self._revalidate(key_hash))
        self._tasks.add(task)  # held until done: the loop keeps only weak references to tasks
        task.add_done_callback(self._tasks.discard)

    async def _revalidate(self, key_hash: str) -> None:
        try:
            user = await self._look_up(key_hash)
        except Exception as exc:  # the store is away: the key stays stale, served, and is tried on its next use
            log.warning("could not look a cached API key up again (%s); it stays cached", type(exc).__name__)
            return
        finally:
            self._refreshing.discard(key_hash)
        self.cache.put(key_hash, user)

    async def settled(self) -> None:
        """Wait for the background look-ups under way (tests; shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _look_up(self, key_hash: str) -> User | None:
        try:
            with anyio.fail_after(self.lookup_timeout_s):
                return await anyio.to_thread.run_sync(self.accounts.user_for_key, key_hash, abandon_on_cancel=True)
        except (TimeoutError, StoreError, httpx.HTTPError) as exc:
            reason = "did not answer in time" if isinstance(exc, TimeoutError) else "is not reachable"
            raise ServiceUnavailable(f"the key store {reason}; retry in a few seconds", code="STORE_UNAVAILABLE",
                                     headers={"Retry-After": "2"}) from None


async def current_user(request: Request) -> User:
    # The authenticator is taken from the app's components here rather than as a dependency of its own: each
    # dependency with parameters costs a signature-model conversion per request (about 20 us on modelSelect).
    return await request.app.state.services.authenticator.user_for(request)
