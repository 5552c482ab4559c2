"""Every response carries `x-request-id`; error bodies repeat it as `request_id`. Plain ASGI for speed."""

from __future__ import annotations

import re
from typing import Any

from api.random_ids import random_hex

HEADER = b"x-request-id"
_SAFE = re.compile(rb"[A-Za-z0-9._:-]{1,128}")  # fullmatch: a $ would also pass a final newline


def request_id_of(scope: Any) -> str | None:
    return scope.get("state", {}).get("request_id")


class RequestIdMiddleware:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Honour a caller's id when it is safe to echo; otherwise mint one.
        incoming = next((v for k, v in scope.get("headers", ()) if k == HEADER), None)
        rid = incoming.decode() if incoming and _SAFE.fullmatch(incoming) else random_hex(16)
        scope.setdefault("state", {})["request_id"] = rid
        raw = rid.encode()

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != HEADER]
                headers.append((HEADER, raw))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_id)
