"""Numbered, append-only SQL migrations (NNNN_name.sql), applied in order, each in its own transaction, on either
engine. Each file is written once, in the SQL both engines share; the engine adapts the few type names that differ
(SqlDatabase.ddl). Where a migration cannot be written portably, a file NNNN_name.postgres.sql beside it replaces it
on PostgreSQL (same number and name, so both engines record the same history).

Several processes may start at once on PostgreSQL: each migration's transaction first takes one lock and re-checks
that the version is still missing, so exactly one process applies it.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.sql import SqlDatabase

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql\Z")
_VARIANT = re.compile(r"^(\d{4}_[a-z0-9_]+)\.(postgres)\.sql\Z")
MIGRATIONS_LOCK = "schema-migrations"
_TABLE = ("CREATE TABLE IF NOT EXISTS schema_migrations ("
          " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())")


def available(engine: str = "duckdb") -> list[tuple[int, str, str]]:
    """(version, file name, sql) for every migration shipped in storage/migrations/, as `engine` runs it."""
    found, variants = [], {}
    for entry in resources.files("storage").joinpath("migrations").iterdir():
        match, variant = _NAME.match(entry.name), _VARIANT.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text(encoding="utf-8")))
        elif variant and variant.group(2) == engine:
            variants[variant.group(1) + ".sql"] = entry.read_text(encoding="utf-8")
    found = sorted((v, name, variants.get(name, sql)) for v, name, sql in found)
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers in storage/migrations: {versions}")
    return found


def apply(db: SqlDatabase) -> list[str]:
    """Apply every migration not yet recorded; return the names applied (by this process)."""
    with db.transaction():
        db.serialize(MIGRATIONS_LOCK)
        db.run(_TABLE)
        done = {row[0] for row in db.rows("SELECT version FROM schema_migrations")}
    applied = []
    for version, name, sql in available(db.engine):
        if version in done:
            continue
        with db.transaction():
            db.serialize(MIGRATIONS_LOCK)
            if db.rows("SELECT 1 FROM schema_migrations WHERE version = ?", [version]):
                continue  # another process applied it meanwhile
            db.run(db.ddl(sql))
            db.run("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])
        applied.append(name)
    return applied
