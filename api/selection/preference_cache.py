"""Preferences for the hot path without a store call per request.

modelSelect reads the caller's preference on every request that names one. With the store behind the owner RPC
that would be a blocking HTTP call per request, so each API process keeps the preferences it has read. An entry is
dropped when the store reports a change to that preference (Store.subscribe: at once in the process that made the
change, within about half a second in every other API worker, via the owner's change feed) and expires after
`ttl_seconds` in any case, the bound if the feed is down. Unknown ids are not cached: a preference created on
another worker is found at its first use.
"""

from __future__ import annotations

import threading
import time

from storage.records import Preference, is_key_subject


class PreferenceCache:
    def __init__(self, store, ttl_seconds: float = 5.0, max_entries: int = 50_000) -> None:
        self.store, self.ttl, self.max_entries = store, ttl_seconds, max_entries
        self._entries: dict[str, tuple[float, Preference]] = {}
        self._generation = 0  # bumped by every invalidation, so a read that raced one is not cached
        self._lock = threading.Lock()

    def attach(self) -> "PreferenceCache":
        self.store.subscribe(self.invalidate, resync=self.clear)
        return self

    def cached(self, preference_id: str) -> bool:
        """Whether get_preference would answer from memory (no RPC)."""
        hit = self._entries.get(preference_id)
        return hit is not None and hit[0] > time.monotonic()

    def get_preference(self, user_id: str, preference_id: str) -> Preference | None:
        hit = self._entries.get(preference_id)
        if hit is not None and hit[0] > time.monotonic():
            # Keyed by id alone; another user's preference must look exactly like an unknown one.
            return hit[1] if hit[1].user_id == user_id else None
        generation = self._generation
        pref = self.store.preferences.get(user_id, preference_id)
        if pref is not None:
            with self._lock:
                if generation == self._generation:
                    if len(self._entries) >= self.max_entries:
                        self._entries.clear()
                    self._entries[preference_id] = (time.monotonic() + self.ttl, pref)
        return pref

    def invalidate(self, preference_id: str) -> None:
        if is_key_subject(preference_id):  # a revoked key, not a preference
            return
        with self._lock:
            self._generation += 1
            self._entries.pop(preference_id, None)

    def clear(self) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()
