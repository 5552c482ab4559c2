"""The one ASGI middleware behind metrics, traces and the access log (plain ASGI, like api/request_id.py, for speed).

It sits inside RequestIdMiddleware (so the request id is known) and around the whole handler chain (404s and 405s
are counted too). Gateway responses (/v1/...) get `x-switchboard-overhead-ms`: the time from the request's arrival
to its response's first byte, less what the upstream attempts took until their first byte or failure."""

from __future__ import annotations

import time
from typing import Any

from api.observability import access_log
from api.observability.exchange import CURRENT, Exchange
from api.observability.metrics import HTTP_DURATION, HTTP_REQUESTS, OVERHEAD, REFUSAL_CODES, REFUSALS, labelled
from api.request_id import request_id_of
from storage.keys import KEY_PREFIX, display_prefix

OVERHEAD_HEADER = b"x-switchboard-overhead-ms"
GATEWAY_PATHS = "/v1/"
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})


def key_prefix(scope: Any) -> str | None:
    """The display prefix of the bearer key sent (never more); "other" for something that is not a key's shape."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            token = value.decode("latin-1").partition(" ")[2].strip()
            return display_prefix(token) if token.startswith(KEY_PREFIX) else "other"
    return None


class TelemetryMiddleware:
    def __init__(self, app: Any, *, metrics: bool, tracing: Any = None) -> None:
        self.app, self.metrics, self.tracing = app, metrics, tracing

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = Exchange(scope["method"], scope["path"], request_id=request_id_of(scope),
                            key_prefix=key_prefix(scope))
        token = CURRENT.set(exchange)
        if self.tracing is not None:
            exchange.span, span_token = self.tracing.request_span(scope)
        gateway = exchange.path.startswith(GATEWAY_PATHS)

        async def observed(message: Any) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
                if gateway:
                    exchange.streamed = any(k == b"content-type" and v.startswith(b"text/event-stream")
                                            for k, v in message.get("headers", ()))
                    exchange.overhead_s = exchange.overhead(time.perf_counter())
                    message["headers"] = [*message.get("headers", ()),
                                          (OVERHEAD_HEADER, b"%.2f" % (exchange.overhead_s * 1000))]
            await send(message)

        try:
            await self.app(scope, receive, observed)
        except BaseException:
            exchange.status = exchange.status or 500
            raise
        finally:
            route = scope.get("path_template") or "unmatched"
            self._finish(exchange, route)
            if self.tracing is not None:
                self.tracing.request_ended(exchange.span, span_token, route, exchange.status, exchange.request_id)
            CURRENT.reset(token)

    def _finish(self, exchange: Exchange, route: str) -> None:
        if self.metrics:
            method = exchange.method if exchange.method in METHODS else "other"
            labelled(HTTP_REQUESTS, route, method, str(exchange.status)).inc()
            labelled(HTTP_DURATION, route, method).observe(time.perf_counter() - exchange.started)
            if exchange.error_code in REFUSAL_CODES:
                REFUSALS.labels(exchange.error_code).inc()
            if exchange.overhead_s is not None:
                labelled(OVERHEAD, "true" if exchange.streamed else "false").observe(exchange.overhead_s)
        access_log.write(exchange, route)
