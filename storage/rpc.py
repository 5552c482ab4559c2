"""Remote calls to the process that owns the DuckDB file.

DuckDB admits one read-write process per file. One process owns it (storage/owner_endpoint.py); API workers,
flow runs and the CLI call the owner's `/internal/rpc/<domain>.<method>` with a bearer token from the owner file.
The methods are those of storage/interfaces.py, and their annotations type both sides: arguments and results are
msgspec-encoded and decoded into exactly the declared types, so the wire contract cannot drift from the interface.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any, cast, get_type_hints

import httpx
import msgspec

from storage.errors import StoreError
from storage.interfaces import (
    DOMAINS,
    Accounts,
    Budgets,
    Jobs,
    Learning,
    Maintenance,
    ModelFigures,
    Optimizations,
    Preferences,
    Routers,
)
from storage.owner_changes import CHANGES_HEADER, ChangeFeed

log = logging.getLogger("switchboard.storage")


class RemoteStoreError(StoreError):
    pass


def interface_methods(interface: type) -> dict[str, Callable[..., Any]]:
    """The public methods an interface declares: what the RPC exposes of that domain."""
    return {name: fn for name, fn in vars(interface).items() if inspect.isfunction(fn) and not name.startswith("_")}


@lru_cache(maxsize=None)
def _signature(method: str) -> tuple[inspect.Signature, dict[str, Any]]:
    """(signature, type hints) of '<domain>.<method>'; KeyError when no interface declares it."""
    domain, _, name = method.partition(".")
    fn = interface_methods(DOMAINS[domain])[name]
    return inspect.signature(fn), get_type_hints(fn)


def dispatch(store: Any, method: str, body: bytes) -> bytes:
    """Owner side: decode typed arguments, call the repository, encode the result. Raises KeyError for unknown
    methods and StoreError (or msgspec.ValidationError) for bad calls."""
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
    domain, _, name = method.partition(".")
    return msgspec.json.encode(getattr(getattr(store, domain), name)(**kwargs))


class _DomainClient:
    """Base of the generated per-domain clients: one real method per interface method (see _client_class)."""

    def __init__(self, remote: "RemoteStore", domain: str) -> None:
        self._remote, self._domain = remote, domain


@lru_cache(maxsize=None)
def _client_class(domain: str) -> type[_DomainClient]:
    """A class with the interface's methods, each one an RPC call with the interface's own signature."""
    def make(name: str) -> Callable[..., Any]:
        method = f"{domain}.{name}"
        sig, hints = _signature(method)

        def call(self: _DomainClient, *args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(self, *args, **kwargs)
            payload = {k: v for k, v in bound.arguments.items() if k != "self"}
            return self._remote.call(method, payload, hints["return"])

        call.__name__, call.__qualname__, call.__doc__ = name, f"{domain}.{name}", DOMAINS[domain].__dict__[name].__doc__
        call.__signature__ = sig  # type: ignore[attr-defined]
        return call

    methods = {name: make(name) for name in interface_methods(DOMAINS[domain])}
    return type(f"Remote{DOMAINS[domain].__name__}", (_DomainClient,), methods)


class RemoteStore:
    """Client side of storage/interfaces.Store: the same domains and methods, executed by the owner over HTTP.

    `subscribe(listener, resync)` gives the same notifications as the local store, across processes: the subjects
    a call of this client changed are delivered before the call returns (header from the owner), everyone else's
    within `poll_seconds` (a thread polls the owner's change feed); `resync` runs when changes may have been
    missed (the owner restarted, or this client fell too far behind). `rediscover` returns the current owner's
    (url, token) after a restart moved or re-keyed it.
    """

    owns_file = False

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
        self.accounts = cast(Accounts, _client_class("accounts")(self, "accounts"))
        self.budgets = cast(Budgets, _client_class("budgets")(self, "budgets"))
        self.preferences = cast(Preferences, _client_class("preferences")(self, "preferences"))
        self.jobs = cast(Jobs, _client_class("jobs")(self, "jobs"))
        self.routers = cast(Routers, _client_class("routers")(self, "routers"))
        self.optimizations = cast(Optimizations, _client_class("optimizations")(self, "optimizations"))
        self.learning = cast(Learning, _client_class("learning")(self, "learning"))
        self.maintenance = cast(Maintenance, _client_class("maintenance")(self, "maintenance"))
        self.model_figures = cast(ModelFigures, _client_class("model_figures")(self, "model_figures"))

    def _connect(self, url: str, token: str) -> httpx.Client:
        return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=self._timeout)

    def close(self) -> None:
        self._stop.set()
        if self._feed_thread is not None:
            self._feed_thread.join(timeout=5)
        self._client.close()

    def call(self, method: str, arguments: dict[str, Any], result_type: Any) -> Any:
        """One RPC: '<domain>.<method>' with its keyword arguments, the result decoded as `result_type`."""
        response = self._request("POST", f"/internal/rpc/{method}", content=msgspec.json.encode(arguments))
        result = msgspec.json.decode(response.content, type=result_type, strict=False)
        changed = response.headers.get(CHANGES_HEADER)
        if changed:
            self._deliver(changed.split(","))
        return result

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
