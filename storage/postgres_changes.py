"""PostgreSQL's change feed: LISTEN on the channel every write NOTIFYs on commit (storage/postgres.py), so each
process learns which subjects (preference ids, revoked keys) changed as soon as they commit, without polling.

It feeds the same seam as the owner's feed (Store.subscribe(listener, resync)): `listener(subject)` per change made
by another process, and `resync()` after the listening connection was lost and re-established (PostgreSQL
restarted, a network cut): notifications sent meanwhile are gone, so the subscriber reloads everything.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg

from storage.postgres import CHANGES_CHANNEL, ORIGIN_SEPARATOR, connect_options

log = logging.getLogger("switchboard.storage")
WAKE_S = 0.5  # how often the listening thread looks up from the socket to see whether it should stop
RECONNECT_MAX_S = 5.0


class ChangeListener:
    def __init__(self, url: str, origin: str, deliver: Callable[[str], None], resync: Callable[[], None]) -> None:
        self._url, self._origin, self._deliver, self._resync = url, origin, deliver, resync
        self._stop = threading.Event()
        self._conn: psycopg.Connection | None = None
        self._connect()  # listening before start() returns: no change committed after it is missed
        self._thread = threading.Thread(target=self._follow, name="store-changes", daemon=True)
        self._thread.start()

    def _connect(self) -> None:
        conn = psycopg.connect(self._url, autocommit=True, **connect_options(self._url))
        conn.execute(f"LISTEN {CHANGES_CHANNEL}")
        self._conn = conn

    def _follow(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            try:
                if self._conn is None:
                    self._connect()
                    delay = 0.1
                    self._resync()  # whatever was sent while nobody listened is lost: reload everything
                assert self._conn is not None
                for note in self._conn.notifies(timeout=WAKE_S):
                    origin, _, subject = note.payload.partition(ORIGIN_SEPARATOR)
                    if origin != self._origin:
                        self._deliver(subject)
            except psycopg.Error as exc:
                if self._stop.is_set():
                    return
                log.warning("store change feed unavailable (%s); reconnecting", exc)
                self._drop()
                self._stop.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX_S)
            except Exception:  # a failing subscriber must not end the feed
                log.exception("store change listener failed")

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._drop()
