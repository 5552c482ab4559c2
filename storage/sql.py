"""What every engine of the system of record offers the repositories: statements, transactions, row-level
serialisation and change notifications. The repositories (storage/repositories/) are written once against this and
run unchanged on DuckDB (storage/database.py, one process owns the file) and on PostgreSQL (storage/postgres.py,
every process connects); an engine supplies only what its dialect does differently.

Statements use `?` placeholders. A transaction is per thread and re-entrant: `rows`/`run` inside it use its
connection, so a repository method can call another inside its own transaction; `with db.transaction() as tx:`
also offers `tx.execute(sql, params).fetchall()`, the DuckDB connection's own idiom, on either engine. Changed subjects (`notify`) reach
this process's listeners after the outermost transaction commits, never for a rolled-back one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger("switchboard.storage")


def now() -> datetime:
    return datetime.now(timezone.utc)


def sql_literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


class Result:
    def __init__(self, rows: list[tuple]) -> None:
        self._rows = rows

    def fetchall(self) -> list[tuple]:
        return self._rows

    def fetchone(self) -> tuple | None:
        return self._rows[0] if self._rows else None


class Transaction:
    """What `SqlDatabase.transaction()` yields: statements on the transaction's connection."""

    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def execute(self, sql: str, params: list[Any] | None = None) -> Result:
        return Result(self._db.rows(sql, params))


class SqlDatabase:
    """Engine-independent part; subclasses implement `_connection` (a connection in a transaction), `_execute`,
    `_one_shot` (a statement outside any transaction) and may override `serialize`, `_publish`, `ddl`."""

    engine = ""  # "duckdb" | "postgres": picks a migration's engine-specific file, if it has one
    # Appended to a SELECT whose rows the transaction goes on to change: row locks where other processes write too.
    FOR_UPDATE = ""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir  # where snapshots for analysts go (storage/repositories/maintenance.py)
        self._local = threading.local()
        self._listeners: list[Callable[[str], None]] = []

    # --- what subclasses provide --------------------------------------------------------------------------------

    def _connection(self) -> AbstractContextManager[Any]:
        """A connection inside a new transaction: committed when the block ends, rolled back on an error."""
        raise NotImplementedError

    def _execute(self, conn: Any, sql: str, params: list[Any] | None, fetch: bool) -> list[tuple]:
        raise NotImplementedError

    def _one_shot(self, sql: str, params: list[Any] | None, fetch: bool) -> list[tuple]:
        """A statement in its own transaction."""
        with self.transaction():
            return self._execute(self._local.conn, sql, params, fetch)

    def serialize(self, key: str) -> None:
        """Inside a transaction: wait until no other transaction (of any process) holds `key`, then hold it until
        this one ends. The rules that read-then-write (one optimization per user, training supersession, job
        transitions) take it; an engine where one process serialises every statement needs nothing more."""

    def _publish(self, conn: Any | None, subject: str) -> None:
        """Tell other processes (PostgreSQL: NOTIFY, sent on commit). The DuckDB owner's feed reads listeners."""

    def consistent_reads(self) -> None:
        """First in a transaction: every read of it sees one snapshot (DuckDB's transactions always do)."""

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database (the server does it by itself on PostgreSQL)."""

    def copy_to_parquet(self, table: str, target: Path) -> None:
        raise NotImplementedError

    def ddl(self, sql: str) -> str:
        """A migration's SQL in this engine's dialect (migrations are written once, storage/migrate.py)."""
        return sql

    # --- shared -------------------------------------------------------------------------------------------------

    def rows(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return self._execute(conn, sql, params, True)
        return self._one_shot(sql, params, True)

    def run(self, sql: str, params: list[Any] | None = None) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._execute(conn, sql, params, False)
        else:
            self._one_shot(sql, params, False)

    @property
    def in_transaction(self) -> bool:
        return getattr(self._local, "conn", None) is not None

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One transaction for the block (joined when this thread already has one)."""
        if self.in_transaction:
            yield Transaction(self)
            return
        pending: list[str] = []
        with self._connection() as conn:
            self._local.conn, self._local.pending = conn, pending
            try:
                yield Transaction(self)
            finally:
                self._local.conn, self._local.pending = None, None
        for subject in dict.fromkeys(pending):
            self._deliver(subject)

    def subscribe(self, listener: Callable[[str], None]) -> None:
        """`listener(subject_id)` after each committed change made by this process, in the thread that made it."""
        self._listeners.append(listener)

    def notify(self, subject_id: str | None) -> None:
        if subject_id is None:
            return
        conn = getattr(self._local, "conn", None)
        self._publish(conn, subject_id)
        if conn is not None:
            self._local.pending.append(subject_id)
        else:
            self._deliver(subject_id)

    def _deliver(self, subject: str) -> None:
        for listener in self._listeners:
            listener(subject)

    def close(self) -> None:
        raise NotImplementedError
