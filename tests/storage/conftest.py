"""One repository suite, two engines: tests that take `store` run on DuckDB (the embedded shape's LocalStore) and on
a real PostgreSQL server the suite starts itself (tests/support/postgres.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from storage.store import LocalStore, SqlStore

ENGINES = ("duckdb", "postgres")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.duckdb"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty database on the suite's PostgreSQL server."""
    from tests.support.postgres import drop_database, new_database

    url = new_database()
    yield url
    drop_database(url)


def open_engine(engine: str, db: Path, request: pytest.FixtureRequest) -> SqlStore:
    if engine == "duckdb":
        return LocalStore(db)
    # lazy: psycopg loads only for the PostgreSQL half
    from storage.postgres_store import PostgresStore

    return PostgresStore(request.getfixturevalue("postgres_url"), db.parent)


@pytest.fixture(params=ENGINES)
def store(request: pytest.FixtureRequest, db: Path) -> Iterator[SqlStore]:
    s = open_engine(request.param, db, request)
    yield s
    try:
        s.close()
    except Exception:
        pass  # a test closed it already
