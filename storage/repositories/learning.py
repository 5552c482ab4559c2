"""Learned corrections: every version the learn-from-traffic flow fitted, and the pointer that says which one serves
each preference (storage/migrations/0006_learning_from_traffic.sql). Versions are never changed after insert:
promotion and rollback only move the pointer, holding the preference's lock (so concurrent movers on PostgreSQL
queue as they do in the one DuckDB owner), and every move notifies the preference's subject, so each API worker
reloads it (api/selection/learned.py) through the change feed."""

from __future__ import annotations

import uuid

from storage.records import LearnedVersion
from storage.repositories.preferences import preference_lock
from storage.sql import SqlDatabase, now

_COLS = ("v.version_id, v.preference_id, v.created_at, v.labels, v.parameters, v.evaluation, v.promoted,"
         " coalesce(p.version_id = v.version_id, false) AS is_live")
_FROM = "learned_corrections v LEFT JOIN learned_correction_pointer p ON p.preference_id = v.preference_id"


class LearningRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def record_version(self, preference_id: str, labels: int, parameters: str, evaluation: str,
                       promote: bool) -> LearnedVersion:
        version_id = str(uuid.uuid4())
        with self._db.transaction():
            self._db.serialize(preference_lock(preference_id))
            self._db.run("INSERT INTO learned_corrections VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [version_id, preference_id, now(), labels, parameters, evaluation, promote])
            if promote:
                self._point(preference_id, version_id)
        found = self.get(version_id)
        assert found is not None
        return found

    def get(self, version_id: str) -> LearnedVersion | None:
        rows = self._db.rows(f"SELECT {_COLS} FROM {_FROM} WHERE v.version_id = ?", [version_id])
        return LearnedVersion(*rows[0]) if rows else None

    def versions(self, preference_id: str) -> list[LearnedVersion]:
        rows = self._db.rows(f"SELECT {_COLS} FROM {_FROM} WHERE v.preference_id = ? ORDER BY v.created_at",
                             [preference_id])
        return [LearnedVersion(*r) for r in rows]

    def live(self, preference_id: str) -> LearnedVersion | None:
        rows = self._db.rows(f"SELECT {_COLS} FROM {_FROM} WHERE v.preference_id = ? AND p.version_id = v.version_id",
                             [preference_id])
        return LearnedVersion(*rows[0]) if rows else None

    def all_live(self) -> list[LearnedVersion]:
        rows = self._db.rows(f"SELECT {_COLS} FROM {_FROM} WHERE p.version_id = v.version_id")
        return [LearnedVersion(*r) for r in rows]

    def promote(self, preference_id: str, version_id: str) -> LearnedVersion | None:
        """Point the preference at one of its versions; None when it has no such version."""
        with self._db.transaction():
            self._db.serialize(preference_lock(preference_id))
            if not self._db.rows("SELECT 1 FROM learned_corrections WHERE version_id = ? AND preference_id = ?",
                                 [version_id, preference_id]):
                return None
            self._point(preference_id, version_id)
        return self.get(version_id)

    def rollback(self, preference_id: str) -> LearnedVersion | None:
        """Point the preference at the newest promoted version older than the live one, or at none (the router
        alone); returns the version now live (None: the router alone)."""
        with self._db.transaction():
            self._db.serialize(preference_lock(preference_id))
            current = self._db.rows("SELECT v.created_at FROM learned_correction_pointer p JOIN learned_corrections v"
                                    " ON v.version_id = p.version_id WHERE p.preference_id = ?", [preference_id])
            if not current:
                return None
            older = self._db.rows("SELECT version_id FROM learned_corrections WHERE preference_id = ? AND promoted"
                                  " AND created_at < ? ORDER BY created_at DESC LIMIT 1",
                                  [preference_id, current[0][0]])
            self._point(preference_id, older[0][0] if older else None)
        return self.live(preference_id)

    def _point(self, preference_id: str, version_id: str | None) -> None:
        """Inside a transaction. ON CONFLICT rather than DuckDB's INSERT OR REPLACE: both engines run it."""
        self._db.run("INSERT INTO learned_correction_pointer VALUES (?, ?, ?) ON CONFLICT (preference_id)"
                     " DO UPDATE SET version_id = excluded.version_id, updated_at = excluded.updated_at",
                     [preference_id, version_id, now()])
        self._db.notify(preference_id)
