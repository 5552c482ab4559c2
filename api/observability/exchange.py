"""What one request did, filled in as it goes: the middleware makes it, the gateway's hooks add the chosen model and
the upstream attempts, and at the end it becomes metrics, the access-log line and the request span's attributes.
Found through a context variable: the handler, a streamed answer's relay and the decision (in a worker thread,
which anyio starts with a copy of the context) all run within the request's context."""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Attempt:
    provider: str
    model: str
    began: float
    span: Any = None
    outcome: str | None = None
    waited_s: float | None = None  # until its first byte, or its failure: what the caller waited on the provider


@dataclass
class Exchange:
    method: str
    path: str
    started: float = field(default_factory=time.perf_counter)
    status: int = 0
    request_id: str | None = None
    key_prefix: str | None = None
    chosen: str | None = None
    error_code: str | None = None
    overhead_s: float | None = None
    streamed: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    span: Any = None

    def upstream_seconds(self, now: float) -> float:
        """Time spent waiting on providers so far: each attempt until its first byte (or its failure), the one under
        way until now. What a streamed answer's relay waits on after the first byte is the caller's time too."""
        total = 0.0
        for attempt in self.attempts:
            total += attempt.waited_s if attempt.waited_s is not None else now - attempt.began
        return total

    def overhead(self, now: float) -> float:
        return max(0.0, now - self.started - self.upstream_seconds(now))


CURRENT: ContextVar[Exchange | None] = ContextVar("switchboard_exchange", default=None)


def current() -> Exchange | None:
    return CURRENT.get()


def note_error(code: str) -> None:
    exchange = CURRENT.get()
    if exchange is not None:
        exchange.error_code = code
