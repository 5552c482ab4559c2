"""Remote calls to the process that owns the DuckDB file.

DuckDB admits one read-write process per file. The API process owns it; the flow runner's subprocesses and the
CLI call the owner's `/internal/rpc/{method}` with a bearer token from the owner file. Arguments and results are
msgspec-encoded and typed by the Store method's own annotations, so the wire contract cannot drift.
"""

from __future__ import annotations

import inspect
import time
from functools import lru_cache
from typing import Any, Callable, get_type_hints

import httpx
import msgspec

from storage.store import Store, StoreError, exposed_methods


class RemoteStoreError(StoreError):
    pass


@lru_cache(maxsize=None)
def _signature(method: str) -> tuple[inspect.Signature, dict[str, Any]]:
    fn = exposed_methods()[method]
    return inspect.signature(fn), get_type_hints(fn)


def dispatch(store: Store, method: str, body: bytes) -> bytes:
    """Owner side: decode typed arguments, call the store, encode the result. Raises KeyError for unknown
    methods and StoreError (or msgspec.ValidationError) for bad calls."""
    if method not in exposed_methods():
        raise KeyError(method)
    sig, hints = _signature(method)
    raw = msgspec.json.decode(body) if body else {}
    if not isinstance(raw, dict):
        raise msgspec.ValidationError("arguments must be a JSON object")
    kwargs = {}
    for name, param in sig.parameters.items():
        if name == "self":
            continue
        if name in raw:
            kwargs[name] = msgspec.convert(raw[name], hints[name], strict=False)
        elif param.default is inspect.Parameter.empty:
            raise msgspec.ValidationError(f"missing argument {name!r}")
    return msgspec.json.encode(getattr(store, method)(**kwargs))


class RemoteStore:
    """Client side: the same methods as Store, executed by the owner over HTTP."""

    def __init__(self, url: str, token: str, timeout: float = 30.0, retries: int = 5) -> None:
        self._client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
        self._retries = retries

    def close(self) -> None:
        self._client.close()

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method not in exposed_methods():
            raise AttributeError(method)
        sig, hints = _signature(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(None, *args, **kwargs)
            payload = {k: v for k, v in bound.arguments.items() if k != "self"}
            response = self._post(method, msgspec.json.encode(payload))
            return msgspec.json.decode(response, type=hints["return"], strict=False)

        return call

    def _post(self, method: str, body: bytes) -> bytes:
        # Connection errors are retried with backoff: the owner may be restarting. HTTP errors are not.
        for attempt in range(self._retries + 1):
            try:
                response = self._client.post(f"/internal/rpc/{method}", content=body)
            except httpx.TransportError:
                if attempt == self._retries:
                    raise
                time.sleep(min(0.2 * 2 ** attempt, 3.0))
                continue
            if response.status_code >= 400:
                try:
                    message = msgspec.json.decode(response.content)["error"]["message"]
                except Exception:
                    message = response.text[:500]
                raise RemoteStoreError(message)
            return response.content
        raise AssertionError("unreachable")
