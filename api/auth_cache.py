"""Key hash -> user, so the hot path does not call the store for every request; in two tables, so that unknown keys
can never push a known one out.

- Known keys stay for `ttl_seconds`, then turn *stale*: a stale key is still served, and the authenticator looks
  it up again in the background (api/auth.py). A key this worker has seen work is thus never looked up in the
  caller's path again, and never waits for the per-address look-up limit that a flood of random keys exhausts.
  At most `max_entries` known keys are kept (the oldest go first); only keys the store knows get here.
- Unknown keys are cached for `negative_ttl_seconds`: a caller retrying a wrong key costs one look-up, yet a key
  issued a moment ago works within seconds. At most `max_unknown` of them (the oldest go first).

Revocations arrive through the store's change feed and drop the key at once, whatever its age. After a gap in the
feed every known key turns stale (`expire_all`): each is looked up again on its next use.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from enum import Enum

from storage.records import User


class Freshness(Enum):
    FRESH = "fresh"  # cached and within its TTL: use it
    STALE = "stale"  # a known key past its TTL: use it and look it up again in the background
    MISS = "miss"  # not cached (or an unknown key past its TTL): look it up before answering


class AuthCache:
    def __init__(self, ttl_seconds: float = 30.0, max_entries: int = 100_000, negative_ttl_seconds: float = 5.0,
                 max_unknown: int = 10_000, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.negative_ttl = ttl_seconds, min(negative_ttl_seconds, ttl_seconds)
        self.max_entries, self.max_unknown = max_entries, max_unknown
        self.clock = clock
        self._known: dict[str, tuple[float, User]] = {}  # key hash -> (fresh until, user)
        self._unknown: dict[str, float] = {}  # key hash -> cached until

    def lookup(self, key_hash: str) -> tuple[Freshness, User | None]:
        now = self.clock()
        known = self._known.get(key_hash)
        if known is not None:
            return (Freshness.FRESH if known[0] >= now else Freshness.STALE), known[1]
        until = self._unknown.get(key_hash)
        return (Freshness.FRESH if until is not None and until >= now else Freshness.MISS), None

    def get(self, key_hash: str) -> tuple[bool, User | None]:
        """(cached and fresh, user)."""
        freshness, user = self.lookup(key_hash)
        return freshness is Freshness.FRESH, user

    def put(self, key_hash: str, user: User | None) -> None:
        now = self.clock()
        if user is None:
            self._known.pop(key_hash, None)
            _bounded_insert(self._unknown, key_hash, now + self.negative_ttl, self.max_unknown)
        else:
            self._unknown.pop(key_hash, None)
            _bounded_insert(self._known, key_hash, (now + self.ttl, user), self.max_entries)

    def drop(self, key_hash: str) -> None:
        self._known.pop(key_hash, None)
        self._unknown.pop(key_hash, None)

    def expire_all(self) -> None:
        """Every known key turns stale (looked up again on its next use, without waiting for it); unknown keys go."""
        self._known = {key: (float("-inf"), user) for key, (_, user) in self._known.items()}
        self._unknown.clear()

    def clear(self) -> None:
        self._known.clear()
        self._unknown.clear()


def _bounded_insert(table: dict, key: str, value: object, limit: int) -> None:
    table.pop(key, None)  # re-inserted last: the table's order is the order of last writes
    while len(table) >= max(1, limit):
        del table[next(iter(table))]  # the oldest write goes first
    table[key] = value
