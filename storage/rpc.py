"""Remote calls to the process that owns the DuckDB file.

DuckDB admits one read-write process per file. One process owns it (storage/owner_endpoint.py); API workers,
flow runs and the CLI call the owner's `/internal/rpc/{method}` with a bearer token from the owner file.
Arguments and results are msgspec-encoded and typed by the Store method's own annotations, so the wire contract
cannot drift.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from functools import lru_cache
from typing import Any, Callable, get_type_hints

import httpx
import msgspec

from storage.owner_changes import CHANGES_HEADER, ChangeFeed
from storage.store import Store, StoreError, exposed_methods

log = logging.getLogger("switchboard.storage")


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
    """Client side: the same methods as Store, executed by the owner over HTTP.

    `subscribe(listener, resync)` gives the same notifications as Store.subscribe, across processes: the subjects
    a call of this client changed are delivered before the call returns (header from the owner), everyone else's
    within `poll_seconds` (a thread polls the owner's change feed); `resync` runs when changes may have been
    missed (the owner restarted, or this client fell too far behind). `rediscover` returns the current owner's
    (url, token) after a restart moved or re-keyed it.
    """

    def __init__(self, url: str, token: str, timeout: float = 30.0, retries: int = 5,
                 rediscover: Callable[[], tuple[str, str] | None] | None = None, poll_seconds: float = 0.5) -> None:
        self._timeout, self._retries, self._rediscover = timeout, retries, rediscover
        self._client = self._connect(url, token)
        self._listeners: list[Callable[[str], None]] = []
        self._resyncs: list[Callable[[], object]] = []
        self._poll_seconds = poll_seconds
        self._feed_thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._epoch: str | None = None
        self._cursor = -1

    def _connect(self, url: str, token: str) -> httpx.Client:
        return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=self._timeout)

    def close(self) -> None:
        self._stop.set()
        if self._feed_thread is not None:
            self._feed_thread.join(timeout=5)
        self._client.close()

    def __getattr__(self, method: str) -> Callable[..., Any]:
        if method not in exposed_methods():
            raise AttributeError(method)
        sig, hints = _signature(method)

        def call(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(None, *args, **kwargs)
            payload = {k: v for k, v in bound.arguments.items() if k != "self"}
            response = self._request("POST", f"/internal/rpc/{method}", content=msgspec.json.encode(payload))
            result = msgspec.json.decode(response.content, type=hints["return"], strict=False)
            changed = response.headers.get(CHANGES_HEADER)
            if changed:
                self._deliver(changed.split(","))
            return result

        return call

    # --- notifications across processes ----------------------------------------------------------

    def subscribe(self, listener: Callable[[str], None], resync: Callable[[], object] | None = None) -> None:
        self._listeners.append(listener)
        if resync is not None:
            self._resyncs.append(resync)
        if self._feed_thread is None:
            self._poll_feed()  # takes the current cursor now, so every later change is delivered
            self._feed_thread = threading.Thread(target=self._follow_feed, name="store-changes", daemon=True)
            self._feed_thread.start()

    def _deliver(self, subjects: list[str]) -> None:
        for subject in subjects:
            for listener in self._listeners:
                try:
                    listener(subject)
                except Exception:  # one failing listener must not fail the store call that triggered it
                    log.exception("store change listener failed for %s", subject)

    def _poll_feed(self) -> None:
        response = self._request("GET", "/internal/changes", params={"since": self._cursor})
        feed = msgspec.json.decode(response.content, type=ChangeFeed)
        first = self._epoch is None
        missed = not first and (feed.epoch != self._epoch or not feed.complete)
        self._epoch, self._cursor = feed.epoch, feed.cursor
        if missed:
            for resync in self._resyncs:
                try:
                    resync()
                except Exception:
                    log.exception("store resync failed")
        elif not first:
            self._deliver(feed.subjects)

    def _follow_feed(self) -> None:
        while not self._stop.wait(self._poll_seconds):
            try:
                self._poll_feed()
            except Exception as exc:  # owner restarting: keep the last cursor; a new epoch triggers a resync
                log.warning("store change feed unavailable: %s", exc)

    # --- transport ---------------------------------------------------------------------------------

    def _request(self, verb: str, path: str, **kwargs: Any) -> httpx.Response:
        # Connection errors are retried with backoff: the owner may be restarting (possibly on a new URL or with
        # a new token, hence rediscover). Other HTTP errors are the caller's and are not retried.
        for attempt in range(self._retries + 1):
            try:
                response = self._client.request(verb, path, **kwargs)
            except httpx.TransportError:
                if attempt == self._retries:
                    raise
                time.sleep(min(0.2 * 2 ** attempt, 3.0))
                self._follow_owner()
                continue
            if response.status_code == 401 and attempt < self._retries and self._follow_owner():
                continue
            if response.status_code >= 400:
                try:
                    message = msgspec.json.decode(response.content)["error"]["message"]
                except Exception:
                    message = response.text[:500]
                raise RemoteStoreError(message)
            return response
        raise AssertionError("unreachable")

    def _follow_owner(self) -> bool:
        """Point at the owner that is live now; True when that changed the URL or token."""
        found = self._rediscover() if self._rediscover else None
        if found is None:
            return False
        url, token = found
        if url == str(self._client.base_url).rstrip("/") and \
                self._client.headers.get("authorization") == f"Bearer {token}":
            return False
        self._client = self._connect(url, token)  # the old client is left to in-flight calls and the GC
        return True
