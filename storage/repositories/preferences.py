"""Routing preferences in DuckDB. Reads are scoped to the caller's user, so another user's id looks unknown."""

from __future__ import annotations

import uuid

import msgspec

from storage.sql import SqlDatabase, now
from storage.records import OPEN_JOB_STATUSES, Preference, PreferenceChanges

_COLUMNS = ("preference_id, user_id, name, tradeoff, cost_quality_tradeoff, max_model_depth, hash_content,"
            " created_at, updated_at,"
            " EXISTS (SELECT 1 FROM custom_routers r WHERE r.preference_id = p.preference_id) AS has_custom_router,"
            " llm_providers, exploration_rate, judge_sample_rate, judge_model, judge_budget_usd, shadow_sample_rate")



def preference_lock(preference_id: str) -> str:
    """The lock (SqlDatabase.serialize) that orders a preference's training starts, publishes and deletion."""
    return f"preference:{preference_id}"


class PreferenceRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def create(self, user_id: str, name: str) -> Preference:
        pid, created = str(uuid.uuid4()), now()
        self._db.run("INSERT INTO preferences (preference_id, user_id, name, created_at, updated_at)"
                     " VALUES (?, ?, ?, ?, ?)",
                     [pid, user_id, name, created, created])
        pref = self.get(user_id, pid)
        assert pref is not None
        return pref

    def get(self, user_id: str, preference_id: str) -> Preference | None:
        rows = self._db.rows(f"SELECT {_COLUMNS} FROM preferences p WHERE preference_id = ? AND user_id = ?",
                             [preference_id, user_id])
        return Preference(*rows[0]) if rows else None

    def for_user(self, user_id: str) -> list[Preference]:
        rows = self._db.rows(f"SELECT {_COLUMNS} FROM preferences p WHERE user_id = ? ORDER BY created_at",
                             [user_id])
        return [Preference(*row) for row in rows]

    def update(self, user_id: str, preference_id: str, changes: PreferenceChanges) -> Preference | None:
        fields = {f: getattr(changes, f) for f in changes.__struct_fields__}
        given = {f: v for f, v in fields.items() if v is not msgspec.UNSET}
        with self._db.transaction():
            if self.get(user_id, preference_id) is None:
                return None
            if given:
                assignments = ", ".join(f"{f} = ?" for f in given)
                self._db.run(f"UPDATE preferences SET {assignments}, updated_at = ? WHERE preference_id = ?",
                             [*given.values(), now(), preference_id])
            updated = self.get(user_id, preference_id)
            self._db.notify(preference_id)  # API workers cache preferences for the hot path (api/selection/preference_cache.py)
        return updated

    def delete(self, user_id: str, preference_id: str) -> list[str] | None:
        with self._db.transaction():
            # The preference's lock: a training start or a publish of it waits for the deletion, then sees it.
            self._db.serialize(preference_lock(preference_id))
            if self.get(user_id, preference_id) is None:
                return None
            paths = [r[0] for r in self._db.rows(
                "SELECT artefact_path FROM custom_routers WHERE preference_id = ?", [preference_id])]
            self._db.run("DELETE FROM custom_routers WHERE preference_id = ?", [preference_id])
            self._db.run("DELETE FROM learned_correction_pointer WHERE preference_id = ?", [preference_id])
            self._db.run("DELETE FROM learned_corrections WHERE preference_id = ?", [preference_id])
            self._db.run("DELETE FROM preferences WHERE preference_id = ?", [preference_id])
            # A training job still running for it must not publish afterwards (publishing needs an open job).
            self._db.run(f"UPDATE jobs SET status = 'cancelled', error = 'the preference was deleted',"
                         f" updated_at = ? WHERE subject_id = ? AND status IN {OPEN_JOB_STATUSES}",
                         [now(), preference_id])
            self._db.notify(preference_id)
        return paths
