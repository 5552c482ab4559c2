"""The DuckDB engine of the system of record: one connection shared by every repository of the process.

DuckDB admits one read-write process per file (docs/architecture.md, rule 6); within that process statements are
tiny, so one re-entrant lock serialises them, and a transaction holds it throughout: that is also what makes the
read-then-write rules atomic here (`serialize` needs nothing more). Repositories report each committed change of a
subject (a preference id) through `notify`, so the owning process can keep in-memory indexes current without
polling and can tell other processes through its change feed (storage/owner_changes.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from storage import migrate
from storage.errors import DatabaseLocked
from storage.sql import SqlDatabase, now, sql_literal

__all__ = ["Database", "now"]


class DuckDbConnection(SqlDatabase):
    """An open DuckDB connection as an engine (also an analyst's in-memory one, storage/analytics.py)."""

    engine = "duckdb"

    def __init__(self, conn: duckdb.DuckDBPyConnection, data_dir: Path) -> None:
        super().__init__(data_dir)
        self.conn = conn
        self.lock = threading.RLock()

    @contextmanager
    def _connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.lock:
            self.conn.execute("BEGIN TRANSACTION")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def _execute(self, conn: Any, sql: str, params: list[Any] | None, fetch: bool) -> list[tuple]:
        result = conn.execute(sql, params or [])
        return result.fetchall() if fetch else []

    def _one_shot(self, sql: str, params: list[Any] | None, fetch: bool) -> list[tuple]:
        with self.lock:  # DuckDB commits a lone statement by itself
            return self._execute(self.conn, sql, params, fetch)

    def checkpoint(self) -> None:
        self.run("CHECKPOINT")

    def copy_to_parquet(self, table: str, target: Path) -> None:
        self.run(f"COPY {table} TO {sql_literal(target)} (FORMAT parquet)")

    def close(self) -> None:
        self.conn.close()


class Database(DuckDbConnection):
    """The DuckDB file of the embedded shape, migrated on open."""

    def __init__(self, db_path: Path, apply_migrations: bool = True) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = duckdb.connect(str(db_path))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise DatabaseLocked(
                    f"{db_path} is opened for writing by another process; "
                    "stop it, or talk to it through its owner URL") from exc
            raise
        super().__init__(conn, db_path.parent)
        self.path = db_path
        self._closed = False
        self.applied_migrations = migrate.apply(self) if apply_migrations else []

    def close(self) -> None:
        with self.lock:
            if self._closed:
                return
            self._closed = True
            self.conn.execute("CHECKPOINT")
            self.conn.close()
