"""Read-only SQL over everything the service stores, for notebooks and `switchboard report`, while it runs.

`connect()` returns an in-memory DuckDB connection with the views of storage/analytics_views.sql over:
- the Parquet event logs (sessions, feedback, llm_usage), read in place: on a local folder every query sees each
  part file flushed so far (DuckDB lists the folder again at each query; writers publish whole files by rename, so
  a reader never sees half a file); on another filesystem (`events_dir` a URI or a pyarrow filesystem, see
  storage/events.py) through pyarrow, seeing the part files that existed at connect time, as the catalogue does;
- the catalogue tables (jobs, preferences, routers, trainings, optimization runs), copied into memory at connect
  time, as `store.<table>`. While the service runs they come from a Parquet snapshot the owning process writes on
  request (RPC `export_analytics_snapshot`), because DuckDB refuses even a read-only open of a file another process
  holds for writing; when nothing runs, from the file itself, attached read-only and detached at once.
Either way the connection holds no lock on switchboard.duckdb, so a notebook left open never stops the service from
starting. Reconnect to see newer catalogue rows, or an event log that was still empty when connecting.
"""

from __future__ import annotations

import shutil
import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow.fs as pafs

from storage import events, migrate
from storage.database import DuckDbConnection
from storage.errors import StoreError
from storage.event_schemas import BY_TABLE
from storage.layout import DataDir, configured_data_dir, configured_database_url, configured_events_uri
from storage.owner import live_owner
from storage.repositories.maintenance import CATALOGUE_TABLES
from storage.sql import sql_literal
from storage.rpc import RemoteStore

if TYPE_CHECKING:
    from storage.postgres_store import PostgresStore

EVENT_TABLES = tuple(BY_TABLE)  # sessions, feedback, llm_usage, gateway_calls
LOCK_RETRIES = 10


class AnalyticsUnavailable(StoreError):
    """The catalogue could not be read (e.g. a process holds the file without serving the owner RPC)."""


def view_statements() -> list[str]:
    text = resources.files("storage").joinpath("analytics_views.sql").read_text(encoding="utf-8")
    return [s.strip() for s in text.split("\n;\n") if s.strip()]


def view_names() -> list[str]:
    return [s.split("CREATE VIEW ", 1)[1].split()[0] for s in view_statements()]


def connect(data_dir: Path | str | None = None, events_dir: events.EventsDir | None = None
            ) -> duckdb.DuckDBPyConnection:
    """The analysts' connection for a data dir (default: the configured SWITCHBOARD_DATA_DIR) and its event logs
    (default: SWITCHBOARD_EVENTS_URI when set, else the data dir's events/ folder)."""
    layout = DataDir(Path(data_dir) if data_dir is not None else configured_data_dir())
    conn = duckdb.connect()
    try:
        _load_catalogue(conn, layout.db_path, layout.run_dir)
        for table in EVENT_TABLES:
            _event_view(conn, events_dir or configured_events_uri() or layout.events_dir, table)
        for statement in view_statements():
            conn.execute(statement)
    except BaseException:
        conn.close()
        raise
    return conn


def _load_catalogue(conn: duckdb.DuckDBPyConnection, db_path: Path, run_dir: Path) -> None:
    """Create store.<table> with the migrations' exact schema, then fill it from the owner or the file."""
    conn.execute("ATTACH ':memory:' AS store")
    conn.execute("USE store")
    migrate.apply(DuckDbConnection(conn, db_path.parent))
    conn.execute("USE memory")
    database_url = configured_database_url()
    if database_url:  # PostgreSQL is the system of record: this process writes the snapshot itself
        # lazy: psycopg loads only where PostgreSQL is configured
        from storage.postgres_store import PostgresStore

        _copy_snapshot(conn, PostgresStore(database_url, db_path.parent))
        return
    info = live_owner(run_dir)
    if info is not None:
        _copy_snapshot(conn, RemoteStore(info.url, info.token))
    elif db_path.exists():
        _copy_from_file(conn, db_path)


def _copy_snapshot(conn: duckdb.DuckDBPyConnection, store: RemoteStore | PostgresStore) -> None:
    try:
        folder = Path(store.maintenance.export_analytics_snapshot())
    finally:
        store.close()
    try:
        for table in CATALOGUE_TABLES:
            conn.execute(f"INSERT INTO store.{table} BY NAME SELECT * FROM read_parquet("
                         f"{sql_literal(folder / f'{table}.parquet')})")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _copy_from_file(conn: duckdb.DuckDBPyConnection, db_path: Path) -> None:
    # A flow run or CLI command may hold the file for a moment when no owner serves; wait a little for it.
    for attempt in range(LOCK_RETRIES):
        try:
            conn.execute(f"ATTACH {sql_literal(db_path)} AS live (READ_ONLY)")
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            if attempt == LOCK_RETRIES - 1:
                raise AnalyticsUnavailable(
                    f"{db_path} is held for writing by a process that serves no owner RPC (run/owner.json); "
                    "stop it, or start the service so the owner can hand out snapshots") from exc
            time.sleep(0.5)
    try:
        present = {r[0] for r in conn.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'live'").fetchall()}
        for table in CATALOGUE_TABLES:
            if table in present:  # an older file may predate a table; its copy stays empty
                conn.execute(f"INSERT INTO store.{table} BY NAME SELECT * FROM live.{table}")
    finally:
        conn.execute("DETACH live")


def _event_view(conn: duckdb.DuckDBPyConnection, events_dir: events.EventsDir, table: str) -> None:
    name = f"events_{table}"
    # An empty table with the writer's schema, so every view binds: alone while nothing is logged, and beside the
    # part files otherwise, so columns added since older parts were written read as nulls.
    empty = BY_TABLE[table].empty_table()
    conn.register("_empty_events", empty)
    try:
        conn.execute(f"CREATE TABLE {name}_schema AS SELECT *, NULL::DATE AS day FROM _empty_events")
    finally:
        conn.unregister("_empty_events")
    if not events.parts(events_dir, table):
        conn.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_schema")
    elif isinstance(events.location(events_dir)[0], pafs.LocalFileSystem):
        scan = events.duckdb_scan(Path(events.location(events_dir)[1]), table)
        conn.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_schema UNION ALL BY NAME {scan}")
    else:  # DuckDB cannot list a pyarrow filesystem: it scans pyarrow's dataset, filters pushed down
        conn.register(f"{name}_parts", events.dataset(events_dir, table, BY_TABLE[table]))
        conn.execute(f"CREATE VIEW {name} AS SELECT * FROM {name}_parts")
