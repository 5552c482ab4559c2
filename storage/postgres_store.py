"""The system of record on PostgreSQL, opened by every process for itself (no owner): the shared repositories over
storage/postgres.py, and other processes' changes from LISTEN/NOTIFY (storage/postgres_changes.py)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from storage.postgres import PostgresDatabase
from storage.postgres_changes import ChangeListener
from storage.store import SqlStore

log = logging.getLogger("switchboard.storage")


class PostgresStore(SqlStore):
    owns_file = False  # many processes write: no one of them may apply the start-up restart rule for the others

    def __init__(self, url: str, data_dir: Path, max_connections: int = 10) -> None:
        self.postgres = PostgresDatabase(url, data_dir, max_connections=max_connections)
        super().__init__(self.postgres)
        self._listeners: list[Callable[[str], None]] = []
        self._resyncs: list[Callable[[], object]] = []
        self._feed: ChangeListener | None = None
        self._feed_lock = threading.Lock()

    def subscribe(self, listener: Callable[[str], None], resync: Callable[[], object] | None = None) -> None:
        self.postgres.subscribe(listener)  # this process's own changes, at commit
        self._listeners.append(listener)
        if resync is not None:
            self._resyncs.append(resync)
        with self._feed_lock:
            if self._feed is None:
                self._feed = ChangeListener(self.postgres.url, self.postgres.origin, self._deliver, self._resync)

    def _deliver(self, subject: str) -> None:
        for listener in self._listeners:
            try:
                listener(subject)
            except Exception:
                log.exception("store change listener failed for %s", subject)

    def _resync(self) -> None:
        for resync in self._resyncs:
            try:
                resync()
            except Exception:
                log.exception("store resync failed")

    def close(self) -> None:
        if self._feed is not None:
            self._feed.close()
        super().close()
