"""What every hot route's lean path shares (docs/architecture.md, "The lean path of a hot endpoint"): the body
decoded by msgspec straight into the route's type, and the caller from the app's own cached `user` provider,
without Litestar's per-request kwargs extraction, dependency resolution or signature model."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request

from storage.records import User

DECODE_ERRORS = (msgspec.DecodeError, RecursionError, UnicodeDecodeError)  # ValidationError is a DecodeError


async def decoded(request: Request, decoder: msgspec.json.Decoder) -> tuple[Any, int] | None:
    """(the body decoded, its size in bytes), or None when it does not decode cleanly: the route's declared handler
    then reports it with the errors and order of checks it always had (the body, then the key, then the schema)."""
    body = await request.body()  # bounded by the app's body limit and api/body_guard.py, as before
    try:
        return decoder.decode(body), len(body)
    except DECODE_ERRORS:
        return None


async def caller(request: Request) -> User:
    """The app's `user` provider (api/app.py: the cached authenticator, its rate limits, a trace span when on)."""
    return await request.app.dependencies["user"].dependency(request)
