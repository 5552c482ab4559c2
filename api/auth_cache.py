"""A short-lived cache from key hash to user, so the hot path does not hit DuckDB for every request."""

from __future__ import annotations

import time

from storage.records import User


class AuthCache:
    def __init__(self, ttl_seconds: float = 30.0, max_entries: int = 10_000) -> None:
        self.ttl = ttl_seconds
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
        self._entries[key_hash] = (time.monotonic() + self.ttl, user)

    def clear(self) -> None:
        self._entries.clear()
