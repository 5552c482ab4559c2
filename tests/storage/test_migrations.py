"""Numbered, append-only migrations: against an empty database, twice, an old database, and a failing one; on both
engines where the SQL runs (tests/storage/conftest.py), from the same files."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import duckdb
import pytest

from storage import migrate
from storage.database import Database
from storage.sql import SqlDatabase
from storage.store import LocalStore
from tests.storage.conftest import ENGINES

MIGRATIONS_DIR = Path(str(resources.files("storage").joinpath("migrations")))
CORE_TABLES = {"users", "api_keys", "preferences", "jobs", "custom_routers"}


def tables(conn: duckdb.DuckDBPyConnection | SqlDatabase) -> set[str]:
    sql = "SELECT table_name FROM information_schema.tables WHERE table_schema IN ('main', 'public')"
    if isinstance(conn, SqlDatabase):
        return {r[0] for r in conn.rows(sql)}
    return {r[0] for r in conn.execute(sql).fetchall()}


def created_by_sql() -> set[str]:
    """Every table a shipped migration creates, read from the SQL itself."""
    names = set()
    for _, _, sql in migrate.available():
        names |= {m.lower() for m in re.findall(r"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", sql, re.I)}
    return names


@pytest.fixture(params=ENGINES)
def conn(request: pytest.FixtureRequest, tmp_path: Path):
    """An empty database, not migrated yet."""
    if request.param == "duckdb":
        engine: SqlDatabase = Database(tmp_path / "m.duckdb", apply_migrations=False)
    else:
        # lazy: the PostgreSQL half only
        from storage.postgres import PostgresDatabase

        engine = PostgresDatabase(request.getfixturevalue("postgres_url"), tmp_path, apply_migrations=False)
    yield engine
    engine.close()


def test_migration_files_are_numbered_from_one_without_gaps():
    # An engine's variant (NNNN_name.postgres.sql) is not a migration of its own (storage/migrate.py).
    sql_files = sorted(p.name for p in MIGRATIONS_DIR.iterdir() if p.suffix == ".sql" and p.name.count(".") == 1)
    assert sql_files, "no migrations shipped"
    for name in sql_files:
        assert re.fullmatch(r"\d{4}_[a-z0-9_]+\.sql", name), f"{name} does not follow NNNN_name.sql"
    numbers = [int(name[:4]) for name in sql_files]
    assert numbers == list(range(1, len(numbers) + 1))
    # available() sees exactly these files, in order.
    assert [name for _, name, _ in migrate.available()] == sql_files


def test_empty_database_gets_every_table_and_every_version(conn):
    applied = migrate.apply(conn)
    expected_versions = [v for v, _, _ in migrate.available()]
    assert applied == [name for _, name, _ in migrate.available()]
    rows = conn.rows("SELECT version, name, applied_at FROM schema_migrations ORDER BY version")
    assert [r[0] for r in rows] == expected_versions == list(range(1, len(expected_versions) + 1))
    assert [r[1] for r in rows] == applied
    assert all(r[2] is not None for r in rows)
    present = tables(conn)
    assert CORE_TABLES <= present
    assert created_by_sql() <= present
    assert "schema_migrations" in present


def test_applying_twice_is_a_no_op(conn):
    migrate.apply(conn)
    conn.run("INSERT INTO users VALUES ('u', 'o', 'free', false, false, now())")
    before = conn.rows("SELECT * FROM schema_migrations ORDER BY version")
    assert migrate.apply(conn) == []
    assert conn.rows("SELECT * FROM schema_migrations ORDER BY version") == before
    assert conn.rows("SELECT count(*) FROM users")[0][0] == 1


def test_store_applies_migrations_once(tmp_path):
    db = tmp_path / "s.duckdb"
    first = LocalStore(db)
    assert first.database.applied_migrations == [name for _, name, _ in migrate.available()]
    first.close()
    second = LocalStore(db)
    try:
        assert second.database.applied_migrations == []
    finally:
        second.close()


def test_a_version_1_database_upgrades_to_the_latest_keeping_its_rows(tmp_path):
    db = tmp_path / "old.duckdb"
    version, name, sql = migrate.available()[0]
    assert version == 1
    # Build the database exactly as the first release left it: only 0001 applied and recorded.
    old = duckdb.connect(str(db))
    old.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
                " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")
    old.execute(sql)
    old.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])
    old.execute("INSERT INTO users VALUES ('olduser', 'oldorg', 'startup', true, false, now())")
    old.execute("INSERT INTO api_keys VALUES ('k1', 'hash1', 'sb-abcdef', 'olduser', now(), NULL)")
    old.execute("INSERT INTO preferences VALUES ('p1', 'olduser', 'Legacy', 'cost', NULL, 3, true, now(), now())")
    assert "jobs" not in tables(old)
    old.close()

    store = LocalStore(db)
    try:
        assert store.database.applied_migrations == [n for v, n, _ in migrate.available() if v > 1]
        assert store.accounts.user_for_key("hash1").tier == "startup"
        pref = store.preferences.get("olduser", "p1")
        assert (pref.name, pref.tradeoff, pref.max_model_depth, pref.hash_content) == ("Legacy", "cost", 3, True)
        assert pref.has_custom_router is False  # a later table is queried alongside the old rows
        versions = [r[0] for r in store.database.rows("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == [v for v, _, _ in migrate.available()]
        # Tables from later migrations work.
        job = store.jobs.create("train-custom-router", "olduser", "p1")
        assert store.jobs.get(job.job_id).status == "created"
    finally:
        store.close()


def test_a_failing_migration_is_rolled_back_and_not_recorded(conn, monkeypatch):
    migrate.apply(conn)
    shipped = migrate.available()
    next_version = shipped[-1][0] + 1
    broken = (next_version, f"{next_version:04d}_broken.sql",
              "CREATE TABLE half_done (x INTEGER); INSERT INTO half_done VALUES (1); SELECT * FROM no_such_table;")
    monkeypatch.setattr(migrate, "available", lambda engine="duckdb": [*shipped, broken])
    with pytest.raises(Exception, match="no_such_table"):
        migrate.apply(conn)
    assert "half_done" not in tables(conn)
    assert next_version not in {r[0] for r in conn.rows("SELECT version FROM schema_migrations")}
    # Once fixed, it applies.
    fixed = (next_version, broken[1], "CREATE TABLE half_done (x INTEGER);")
    monkeypatch.setattr(migrate, "available", lambda engine="duckdb": [*shipped, fixed])
    assert migrate.apply(conn) == [broken[1]]
    assert "half_done" in tables(conn)
