"""Reading a request body is bounded in time, and a body that ends early is the caller's error, not ours.

- granian (hyper) bounds how long a connection may take to send a request's headers (api/cli/http_options.py),
  but nothing bounds the body: a request that declares `Content-Length: 100` and never sends it, or sends a byte
  every few seconds, would hold its connection and its handler forever. Each read of the body here waits at most
  `http_body_idle_timeout_s` for the next bytes, and the whole body must arrive within `http_body_timeout_s`;
  otherwise the answer is 408 `REQUEST_TIMEOUT` and hyper closes the connection (its body was not read to the end).
- granian reports a body hyper could not parse (a negative or overflowing chunk size, a chunk extension over
  hyper's limit, chunk lines ended by a bare LF) exactly as it reports a client that went away: an
  `http.disconnect` before the last chunk. Litestar answers that with a 500 "client disconnected prematurely".
  Either way the request is the caller's and incomplete, so it is a 400 `MALFORMED_BODY` that says what to check
  (a client that really left never reads it).

Plain ASGI, wrapping `receive` only: a request whose handler reads no body (GET) pays one closure.
"""

from __future__ import annotations

import asyncio
from typing import Any

from api.errors import BadRequest, RequestTimeout

MALFORMED_BODY_MESSAGE = (
    "the request body ended before it was complete: the connection closed early, or its chunked transfer encoding "
    "is malformed (chunk sizes in hexadecimal, every line ended by CRLF, chunk extensions of at most a few KB); "
    "send the body again with a Content-Length or well-formed chunks")


class BodyReadGuard:
    def __init__(self, app: Any, *, idle_timeout_s: float, total_timeout_s: float) -> None:
        self.app = app
        self.idle_timeout_s = idle_timeout_s
        self.total_timeout_s = total_timeout_s

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        idle_s, total_s = self.idle_timeout_s, self.total_timeout_s
        reading = {"complete": False, "deadline": 0.0}

        async def bounded_receive() -> Any:
            if reading["complete"]:  # after the body: a handler listening for the client to leave waits freely
                return await receive()
            now = asyncio.get_running_loop().time()
            if not reading["deadline"]:
                reading["deadline"] = now + total_s
            wait = min(idle_s, reading["deadline"] - now)
            try:
                async with asyncio.timeout(max(wait, 0.0)):
                    message = await receive()
            except TimeoutError:
                reading["complete"] = True
                whole = reading["deadline"] - now <= idle_s
                raise RequestTimeout(
                    f"the request body arrived too slowly: {'it was not complete within' if whole else 'no bytes for'} "
                    f"{total_s if whole else idle_s:g} s; send the whole body at once, promptly after the headers",
                    details={"body_idle_timeout_s": idle_s, "body_timeout_s": total_s}) from None
            kind = message["type"]
            if kind == "http.request":
                if not message.get("more_body", False):
                    reading["complete"] = True
            elif kind == "http.disconnect":
                reading["complete"] = True
                raise BadRequest(MALFORMED_BODY_MESSAGE, code="MALFORMED_BODY")
            return message

        await self.app(scope, bounded_receive, send)
