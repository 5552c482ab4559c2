"""Per-key rate limits: a token bucket per (API key, class of endpoint), held in this process's memory.

Two classes per API key: `select` (modelSelect, feedback and the gateway's chat completions: once per LLM call, a
large default) and `jobs` (every other authenticated endpoint: preferences, prompt optimization, router training,
the gateway's model list). One class per client
address, `key-lookup`: each look-up of a key that is not cached (api/auth.py), so a flood of random keys is
refused before it reaches the store; a key the worker has seen work never draws on it (api/auth_cache.py), and
behind a reverse proxy the address is the one it forwards (api/client_address.py). A bucket holds up to `burst`
tokens and refills at `per_minute / 60` tokens a second; a request takes one token or is refused with 429
RATE_LIMITED and `Retry-After` (whole seconds until a token is back). `per_minute` 0 turns a class off.

With several API worker processes each worker keeps its own buckets, so a key's effective limit is the configured
one times the number of workers that its requests reach (set the per-worker figures accordingly).

Cost on the hot path: one dict lookup and a few float operations, no lock. The check runs on the event loop with no
await inside it, so two requests cannot interleave within one bucket update.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from api.errors import TooManyRequests

SELECT, JOBS, KEY_LOOKUP = "select", "jobs", "key-lookup"
# Operations billed to the large `select` class; everything else authenticated is a `jobs` request.
SELECT_OPERATIONS = frozenset({"modelSelect", "reportFeedback", "chatCompletions", "anthropicMessages"})


@dataclass(frozen=True)
class Limit:
    per_minute: int  # 0 = no limit
    burst: int

    @property
    def rate(self) -> float:
        return self.per_minute / 60.0

    @property
    def capacity(self) -> float:
        return float(max(1, self.burst))


class RateLimiter:
    def __init__(self, limits: dict[str, Limit], max_keys: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = {name: limit for name, limit in limits.items() if limit.per_minute > 0}
        self.max_keys, self.clock = max_keys, clock
        self._buckets: dict[tuple[str, str], list[float]] = {}  # (class, key hash) -> [tokens, last refill]

    @staticmethod
    def class_of(operation_id: object) -> str:
        return SELECT if operation_id in SELECT_OPERATIONS else JOBS

    def check(self, key_hash: str, limit_class: str, now: float | None = None, who: str = "this API key",
              per_minute: int | None = None) -> None:
        """Take one token from the bucket of `key_hash` (a key's hash, or a client address) or raise
        TooManyRequests with Retry-After. `per_minute`: the key's own limit set by an admin (0: none), in place of
        the class's, with the class's burst at most."""
        limit = self.limits.get(limit_class)
        if per_minute is not None:
            limit = Limit(per_minute, min(limit.burst, per_minute) if limit else per_minute) if per_minute else None
        if limit is None:
            return
        now = self.clock() if now is None else now
        slot = (limit_class, key_hash)
        bucket = self._buckets.get(slot)
        if bucket is None:
            if len(self._buckets) >= self.max_keys:
                self._buckets.clear()  # bounded memory against floods of keys; forgetting only forgives
            bucket = self._buckets[slot] = [limit.capacity, now]
        tokens = min(limit.capacity, bucket[0] + (now - bucket[1]) * limit.rate)
        bucket[1] = now
        if tokens >= 1.0:
            bucket[0] = tokens - 1.0
            return
        bucket[0] = tokens
        retry_after = max(1, math.ceil((1.0 - tokens) / limit.rate - 1e-9))  # float noise must not add 1 s
        raise TooManyRequests(
            f"rate limit exceeded for {who}: {limit.per_minute} requests a minute (burst {limit.burst}) on "
            f"{limit_class} endpoints; retry after {retry_after} s", code="RATE_LIMITED",
            details={"limit_per_minute": limit.per_minute, "burst": limit.burst, "class": limit_class,
                     "retry_after_seconds": retry_after},
            headers={"Retry-After": str(retry_after)})
