"""A short-lived cache from key hash to user, so the hot path does not call the store for every request.

Unknown keys are cached too, for a shorter time (`negative_ttl_seconds`): a caller retrying a wrong key costs one
look-up, yet a key issued a moment ago works within seconds. Revocations arrive through the store's change feed
(api/auth.py) and drop the key at once, whatever its TTL."""

from __future__ import annotations

import time

from storage.records import User


class AuthCache:
    def __init__(self, ttl_seconds: float = 30.0, max_entries: int = 10_000, negative_ttl_seconds: float = 5.0) -> None:
        self.ttl, self.negative_ttl = ttl_seconds, min(negative_ttl_seconds, ttl_seconds)
        self.max_entries = max_entries
        self._entries: dict[str, tuple[float, User | None]] = {}

    def get(self, key_hash: str) -> tuple[bool, User | None]:
        hit = self._entries.get(key_hash)
        if hit is None or hit[0] < time.monotonic():
            return False, None
        return True, hit[1]

    def put(self, key_hash: str, user: User | None) -> None:
        if len(self._entries) >= self.max_entries:
            self._entries.clear()  # crude but bounded: hostile callers cannot grow memory with random keys
        self._entries[key_hash] = (time.monotonic() + (self.ttl if user is not None else self.negative_ttl), user)

    def drop(self, key_hash: str) -> None:
        self._entries.pop(key_hash, None)

    def clear(self) -> None:
        self._entries.clear()
