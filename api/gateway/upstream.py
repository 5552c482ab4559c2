"""Where each provider's OpenAI-compatible endpoint is, and one pooled async HTTP client to call them.

A direct client rather than LiteLLM: every provider the catalogue lists has an OpenAI-compatible chat endpoint and
the body is forwarded as sent, so there is nothing to translate, and LiteLLM would load its whole provider layer
into the API process.

Provider keys and base URLs come from the server's environment only, as for prompt optimization
(SWITCHBOARD_<PROVIDER>_API_KEY / _API_BASE, SWITCHBOARD_LLM_API_KEY / _API_BASE for every provider; api/settings.py);
a caller can neither send one nor see one: errors are scrubbed of every key the environment holds."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping

from api.gateway.bodies import BadEncoding, TooLarge, read_capped
from api.deployments import Route, usual_key_variables

REDIRECTS = frozenset({301, 302, 303, 307, 308})
CONTEXT_MARKERS = ("context_length_exceeded", "context length", "context window", "maximum context",
                   "too many tokens", "prompt is too long", "reduce the length", "string_above_max_length")


@dataclass(frozen=True)
class Endpoint:
    url: str  # .../chat/completions
    headers: Mapping[str, str]  # shared by every call to this endpoint: never changed in place


def endpoint(route: Route) -> Endpoint:
    """A route's chat endpoint (api/deployments.py resolves which routes a model has): built once per base URL and
    key, then the same object for every call to it (telemetry adds a traceparent to a copy: api/observability)."""
    return _endpoint(route.base, route.key)


@lru_cache(maxsize=4096)  # one per upstream this server calls: the deployments file's and the environment's
def _endpoint(base: str, key: str | None) -> Endpoint:
    # Only the encodings api/gateway/bodies.py undoes itself (within the size bound) are offered.
    headers = {"content-type": "application/json", "accept": "application/json", "accept-encoding": "gzip, deflate"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    return Endpoint(base.rstrip("/") + "/chat/completions", MappingProxyType(headers))


def not_configured_message(providers: list[str]) -> str:
    names = ", ".join(sorted(set(providers)))
    one = providers[0]
    usual = " or ".join(usual_key_variables(one))
    return (f"no provider credentials on this server for {names}: set SWITCHBOARD_{one.upper()}_API_KEY or {usual} "
            f"(a key for the provider's own endpoint), SWITCHBOARD_{one.upper()}_API_BASE (an OpenAI-compatible "
            "server; SWITCHBOARD_LLM_API_BASE for every provider), or name the model in the deployments file "
            "(SWITCHBOARD_DEPLOYMENTS)")


@dataclass(frozen=True)
class Failure:
    """An upstream call that did not answer. `retryable`: another candidate may answer instead (before the first
    byte reached the caller); otherwise the caller gets `status` and `message` (a request the provider refused).
    `message` may quote the provider: it is scrubbed (api/gateway/redaction.py) before anyone sees it."""

    outcome: str  # recorded per attempt: timeout, connect, http_429, http_503, context_length, redirect, ...
    retryable: bool
    status: int
    message: str


def failed_status(status: int, body: bytes) -> Failure:
    text = body[:2000].decode("utf-8", "replace")
    if status in REDIRECTS:  # never followed: an upstream must not send the caller's body (or key) elsewhere
        return Failure("redirect", True, 502, f"the provider answered a redirect ({status}), which is not followed")
    if status < 400:  # 1xx, 201, 204, 304, ...: not a chat completion, and never relayed as the caller's status
        return Failure(f"http_{status}", True, 502, f"the provider answered {status}, not 200 with a completion")
    if status == 429:
        return Failure("http_429", True, status, text)
    if status >= 500:
        return Failure(f"http_{status}", True, status, text)
    if status == 413:
        return Failure("payload_too_large", True, status, text)
    if status in (400, 422) and any(marker in text.lower() for marker in CONTEXT_MARKERS):
        return Failure("context_length", True, status, text)
    if status in (401, 403):  # this server's key, not the caller's request: the caller sees a 502
        return Failure(f"http_{status}", False, 502, "the provider refused this server's credentials")
    return Failure(f"http_{status}", False, status, text)


def failed_transport(exc: BaseException, connect_errors: tuple[type[BaseException], ...]) -> Failure:
    if isinstance(exc, TooLarge):
        return Failure("too_large", True, 502, str(exc))
    if isinstance(exc, BadEncoding):
        return Failure("bad_encoding", True, 502, str(exc))
    if isinstance(exc, connect_errors):
        return Failure("connect", True, 502, f"could not connect to the provider ({type(exc).__name__})")
    if isinstance(exc, TimeoutError):
        return Failure("timeout", True, 504, "the provider sent nothing in time")
    return Failure("transport", True, 502, f"the connection to the provider failed ({type(exc).__name__})")


class Upstream:
    """One pooled aiohttp session, made on the first gateway call inside the serving event loop (so a process that
    only answers modelSelect never imports aiohttp) and closed with the app. aiohttp rather than httpx, which the
    API already loads: measured here, 0.18 ms of CPU per upstream call against httpx's 0.79 ms, which on a busy
    worker is most of what the gateway adds (docs/benchmarks.md, issue 22).

    Redirects are never followed. Bodies are read chunk by chunk, inflated here (api/gateway/bodies.py) and refused
    past `max_response_bytes`, so a huge or gzip-bomb answer costs at most that much memory and inflating. The pool
    is `pool_size` connections; api/gateway/admission.py keeps the calls in flight within it, so a call never
    queues there unbounded."""

    def __init__(self, connect_timeout_s: float, first_byte_timeout_s: float, max_response_bytes: int = 8 << 20,
                 pool_size: int = 1000, pool_wait_s: float = 2.0) -> None:
        self.connect_timeout_s, self.first_byte_timeout_s = connect_timeout_s, first_byte_timeout_s
        self.max_response_bytes, self.pool_size, self.pool_wait_s = max_response_bytes, pool_size, pool_wait_s
        self._session: Any = None
        self.errors: tuple[type[BaseException], ...] = (TimeoutError, OSError, TooLarge, BadEncoding)  # see session
        self.connect_errors: tuple[type[BaseException], ...] = (ConnectionRefusedError,)

    @property
    def session(self) -> Any:
        if self._session is None:
            # lazy: aiohttp loads with the first gateway call, never in a process that only answers modelSelect
            import aiohttp

            self.errors = (aiohttp.ClientError, TimeoutError, OSError, TooLarge, BadEncoding)
            self.connect_errors = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
            # sock_read bounds each wait for bytes: the first byte of an answer, and each gap inside a stream (the
            # overall deadlines are the caller's: api/gateway/service.py). `connect` also bounds a wait for a pooled
            # connection, a backstop behind the admission slots.
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.pool_size, limit_per_host=0, keepalive_timeout=60),
                timeout=aiohttp.ClientTimeout(total=None, connect=self.connect_timeout_s + self.pool_wait_s,
                                              sock_connect=self.connect_timeout_s,
                                              sock_read=self.first_byte_timeout_s),
                # auto_decompress off: aiohttp's decoder inflates all it holds when a connection closes, so an
                # abandoned gzip bomb would still be inflated (measured: 70-180 ms steps of the event loop).
                trust_env=False, auto_decompress=False, raise_for_status=False)
        return self._session

    async def post(self, endpoint: Endpoint, payload: bytes) -> tuple[int, bytes]:
        """Status and body; a non-200 body is cut to its first 64 KiB (only its message is read)."""
        async with self.session.post(endpoint.url, data=payload, headers=endpoint.headers,
                                     allow_redirects=False) as response:
            try:
                if response.status != 200:
                    body = await read_capped(response, 65536, refuse=False)
                    if not response.content.at_eof():
                        response.close()  # the unread rest is dropped (a release would drain it for reuse)
                    return response.status, body
                return response.status, await read_capped(response, self.max_response_bytes)
            except BaseException:
                response.close()  # likewise: a body refused, a deadline passed, a caller gone
                raise

    async def open(self, endpoint: Endpoint, payload: bytes) -> Any:
        """A streaming response, headers read, body not: the caller reads `lines(response)` and closes it."""
        return await self.session.post(endpoint.url, data=payload, headers=endpoint.headers, allow_redirects=False)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
