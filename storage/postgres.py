"""The PostgreSQL engine of the system of record (SWITCHBOARD_DATABASE_URL=postgresql://...): every process (API
workers, flow runs, the CLI) connects directly through a psycopg connection pool; there is no owner process.

What differs from DuckDB is only here: `?` placeholders become psycopg's, the rules that read-then-write serialise
on transaction-scoped advisory locks (`serialize`) and row locks (`FOR UPDATE`), and every change is also sent as a
NOTIFY on commit, which storage/postgres_changes.py turns into the same `subscribe` notifications in every other
process.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool

from storage import migrate
from storage.errors import DatabaseUnavailable
from storage.layout import configured_pool_timeout_s, configured_reconnect_timeout_s
from storage.sql import SqlDatabase

CHANGES_CHANNEL = "switchboard_changes"
# A NOTIFY payload is "<origin>|<subject>": a process skips its own (delivered to it at commit already).
ORIGIN_SEPARATOR = "|"


@lru_cache(maxsize=1024)
def placeholders(sql: str) -> str:
    """`?` -> `%s` for psycopg (a literal `%` doubled). The repositories' SQL has no `?` inside string literals."""
    return sql.replace("%", "%%").replace("?", "%s")


OPEN_TIMEOUT_S = 10.0  # at start-up, how long PostgreSQL may take to answer at all
# libpq waits for the OS's TCP timeout (minutes) on a host that vanished (failover, network cut) unless told otherwise.
CONNECT_TIMEOUT_S = 3


def connect_options(url: str) -> dict[str, Any]:
    """libpq options the URL does not set itself."""
    return {} if "connect_timeout" in conninfo_to_dict(url) else {"connect_timeout": CONNECT_TIMEOUT_S}


_DOUBLE = re.compile(r"\bDOUBLE\b(?!\s+PRECISION)", re.I)


class PostgresDatabase(SqlDatabase):
    engine = "postgres"
    FOR_UPDATE = " FOR UPDATE"

    def __init__(self, url: str, data_dir: Path, max_connections: int = 10, apply_migrations: bool = True,
                 open_timeout_s: float = OPEN_TIMEOUT_S, pool_timeout_s: float | None = None) -> None:
        super().__init__(data_dir)
        self.url = url
        self.origin = secrets.token_hex(8)
        self.pool = ConnectionPool(url, min_size=1, max_size=max_connections, open=False, kwargs=connect_options(url),
                                   timeout=configured_pool_timeout_s() if pool_timeout_s is None else pool_timeout_s,
                                   reconnect_timeout=configured_reconnect_timeout_s(), name="switchboard")
        try:
            self.pool.open(wait=True, timeout=open_timeout_s)
        except Exception as exc:
            self.pool.close()
            raise DatabaseUnavailable(f"PostgreSQL at {_safe(url)} does not answer: {exc}") from exc
        self.applied_migrations = migrate.apply(self) if apply_migrations else []

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        try:
            with self.pool.connection() as conn:  # commits when the block ends, rolls back on an error
                yield conn
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"PostgreSQL is unavailable: {exc}") from exc

    def _execute(self, conn: Any, sql: str, params: list[Any] | None, fetch: bool) -> list[tuple]:
        cursor = conn.execute(placeholders(sql), params) if params else conn.execute(sql)
        return cursor.fetchall() if fetch and cursor.description is not None else []

    def serialize(self, key: str) -> None:
        self.run("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", [key])

    def consistent_reads(self) -> None:
        self.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def _publish(self, conn: Any | None, subject: str) -> None:
        payload = f"{self.origin}{ORIGIN_SEPARATOR}{subject}"
        if conn is not None:
            conn.execute("SELECT pg_notify(%s, %s)", [CHANGES_CHANNEL, payload])  # sent when it commits
        else:
            with self._connection() as own:
                own.execute("SELECT pg_notify(%s, %s)", [CHANGES_CHANNEL, payload])

    def ddl(self, sql: str) -> str:
        return _DOUBLE.sub("DOUBLE PRECISION", sql)

    def copy_to_parquet(self, table: str, target: Path) -> None:
        # lazy: pyarrow loads only for an analyst's snapshot
        import pyarrow as pa
        import pyarrow.parquet as pq

        cursor = self._local.conn.execute(f"SELECT * FROM {table}")
        names = [column.name for column in cursor.description]
        rows = cursor.fetchall()
        data = (pa.Table.from_pylist([dict(zip(names, row)) for row in rows]) if rows
                else pa.table({name: pa.array([], pa.null()) for name in names}))
        pq.write_table(data, target)

    def close(self) -> None:
        self.pool.close()


def _safe(url: str) -> str:
    """The URL without its password, for messages."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)
