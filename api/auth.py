"""Bearer-key authentication (RFC 6750). Keys are looked up by SHA-256 hash; plaintext is never stored."""

from __future__ import annotations

from dataclasses import dataclass

from litestar import Request
from litestar.di import NamedDependency
from litestar.openapi.spec import SecurityScheme

from api.auth_cache import AuthCache
from api.errors import Unauthorized
from api.rate_limit import RateLimiter
from storage.interfaces import Accounts
from storage.keys import hash_key
from storage.records import User

SECURITY_SCHEME_NAME = "BearerAuth"
SECURITY_SCHEMES = {SECURITY_SCHEME_NAME: SecurityScheme(type="http", scheme="bearer",
                                                         description="`Authorization: Bearer <API_KEY>`")}
SECURITY = [{SECURITY_SCHEME_NAME: []}]


def _bearer_token(request: Request) -> str:
    header = request.headers.get("authorization")
    if not header:
        raise Unauthorized("missing Authorization header; send `Authorization: Bearer <API_KEY>`")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("malformed Authorization header; expected `Bearer <API_KEY>`")
    return token


@dataclass
class Authenticator:
    """Key -> user, through a short-lived cache, then the per-key rate limit (None: no limits)."""

    accounts: Accounts
    cache: AuthCache
    rate_limiter: RateLimiter | None = None

    def user_for(self, request: Request) -> User:
        key_hash = hash_key(_bearer_token(request))
        found, user = self.cache.get(key_hash)
        if not found:
            user = self.accounts.user_for_key(key_hash)
            self.cache.put(key_hash, user)
        if user is None:
            raise Unauthorized("invalid or revoked API key")
        if self.rate_limiter is not None:  # after authentication: unknown keys cannot fill the bucket table
            self.rate_limiter.check(key_hash, self.rate_limiter.class_of(request.route_handler.operation_id))
        return user


async def current_user(request: Request, authenticator: NamedDependency[Authenticator]) -> User:
    return authenticator.user_for(request)
