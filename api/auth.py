"""Bearer-key authentication (RFC 6750). Keys are looked up by SHA-256 hash; plaintext is never stored."""

from __future__ import annotations

from litestar.di import NamedDependency
from litestar import Request
from litestar.openapi.spec import SecurityScheme

from api.errors import Unauthorized
from api.services import Services
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


async def current_user(request: Request, services: NamedDependency[Services]) -> User:
    key_hash = hash_key(_bearer_token(request))
    found, user = services.auth_cache.get(key_hash)
    if not found:
        user = services.store.accounts.user_for_key(key_hash)
        services.auth_cache.put(key_hash, user)
    if user is None:
        raise Unauthorized("invalid or revoked API key")
    if services.rate_limiter is not None:  # after authentication: unknown keys cannot fill the bucket table
        services.rate_limiter.check(key_hash, services.rate_limiter.class_of(request.route_handler.operation_id))
    return user
