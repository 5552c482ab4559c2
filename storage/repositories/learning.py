"""Learned corrections in DuckDB: every version the learn-from-traffic flow fitted, and the pointer that says which
one serves each preference (storage/migrations/0006_learning_from_traffic.sql). Versions are never changed after
insert: promotion and rollback only move the pointer, and every move notifies the preference's subject, so each
API worker reloads it (api/selection/learned.py) through the change feed."""

from __future__ import annotations

import uuid

from storage.database import Database, now
from storage.records import LearnedVersion

_COLS = ("v.version_id, v.preference_id, v.created_at, v.labels, v.parameters, v.evaluation, v.promoted,"
         " coalesce(p.version_id = v.version_id, false) AS is_live")
_FROM = "learned_corrections v LEFT JOIN learned_correction_pointer p USING (preference_id)"


class LearningRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record_version(self, preference_id: str, labels: int, parameters: str, evaluation: str,
                       promote: bool) -> LearnedVersion:
        version_id, created = str(uuid.uuid4()), now()
        with self._db.transaction() as conn:
            conn.execute("INSERT INTO learned_corrections VALUES (?, ?, ?, ?, ?, ?, ?)",
                         [version_id, preference_id, created, labels, parameters, evaluation, promote])
            if promote:
                self._point(conn, preference_id, version_id)
        if promote:
            self._db.notify(preference_id)
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
        with self._db.transaction() as conn:
            if not conn.execute("SELECT 1 FROM learned_corrections WHERE version_id = ? AND preference_id = ?",
                                [version_id, preference_id]).fetchall():
                return None
            self._point(conn, preference_id, version_id)
        self._db.notify(preference_id)
        return self.get(version_id)

    def rollback(self, preference_id: str) -> LearnedVersion | None:
        """Point the preference at the newest promoted version older than the live one, or at none (the router
        alone); returns the version now live (None: the router alone)."""
        with self._db.transaction() as conn:
            current = conn.execute("SELECT v.created_at FROM learned_correction_pointer p JOIN learned_corrections v"
                                   " USING (version_id) WHERE p.preference_id = ?", [preference_id]).fetchall()
            if not current:
                return None
            older = conn.execute("SELECT version_id FROM learned_corrections WHERE preference_id = ? AND promoted"
                                 " AND created_at < ? ORDER BY created_at DESC LIMIT 1",
                                 [preference_id, current[0][0]]).fetchall()
            self._point(conn, preference_id, older[0][0] if older else None)
        self._db.notify(preference_id)
        return self.live(preference_id)

    @staticmethod
    def _point(conn, preference_id: str, version_id: str | None) -> None:
        # ON CONFLICT, not DuckDB's INSERT OR REPLACE: the same statement runs on PostgreSQL.
        conn.execute("INSERT INTO learned_correction_pointer VALUES (?, ?, ?) ON CONFLICT (preference_id)"
                     " DO UPDATE SET version_id = excluded.version_id, updated_at = excluded.updated_at",
                     [preference_id, version_id, now()])
