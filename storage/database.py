"""One DuckDB connection shared by every repository of a process, with the discipline they all follow.

DuckDB admits one read-write process per file (docs/architecture.md, rule 6); within that process statements are
tiny, so one re-entrant lock serialises them. Repositories report each committed change of a subject (a
preference id) through `notify`, so the owning process can keep in-memory indexes current without polling and
can tell other processes through its change feed (storage/owner_changes.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from storage import migrate
from storage.errors import DatabaseLocked


def now() -> datetime:
    return datetime.now(timezone.utc)


class Database:
    def __init__(self, db_path: Path) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = duckdb.connect(str(db_path))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise DatabaseLocked(
                    f"{db_path} is opened for writing by another process; "
                    "stop it, or talk to it through its owner URL") from exc
            raise
        self.path = db_path
        self.lock = threading.RLock()
        self._closed = False
        self._listeners: list[Callable[[str], None]] = []
        self.applied_migrations = migrate.apply(self.conn)

    def subscribe(self, listener: Callable[[str], None]) -> None:
        """`listener(subject_id)` after each committed change, in the thread that made it."""
        self._listeners.append(listener)

    def notify(self, subject_id: str | None) -> None:
        if subject_id is None:
            return
        for listener in self._listeners:
            listener(subject_id)

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with self.lock:
            return self.conn.execute(sql, params or []).fetchall()

    def run(self, sql: str, params: list[Any] | None = None) -> None:
        with self.lock:
            self.conn.execute(sql, params or [])

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Hold the lock and run the block in one transaction: committed at the end, rolled back on an error."""
        with self.lock:
            self.conn.execute("BEGIN TRANSACTION")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self.conn.execute("CHECKPOINT")
            self.conn.close()
