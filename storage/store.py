"""The system of record in DuckDB. One process owns the file (see storage/owner.py); others reach it by RPC.

Every public method marked @exposed may be called remotely; its annotations are the wire contract.
"""

from __future__ import annotations

import hmac
import threading
import uuid
from pathlib import Path
from typing import Any, Callable

import duckdb
import msgspec

from storage import keys as keyfmt
from storage import migrate
from storage.records import (JOB_STATUSES, OPEN_JOB_STATUSES, ApiKeyInfo, IssuedKey, Job, Preference,
                             PreferenceChanges, User)
from storage.base import DatabaseLocked, StoreError, _now, exposed  # noqa: F401 (re-exported)
from storage.analytics_snapshot import AnalyticsSnapshotStore
from storage.optimization_store import OptimizationStore
from storage.training_store import RouterTrainingStore


_PREF_COLS = ("preference_id, user_id, name, tradeoff, cost_quality_tradeoff, max_model_depth, hash_content,"
              " created_at, updated_at,"
              " EXISTS (SELECT 1 FROM custom_routers r WHERE r.preference_id = p.preference_id) AS has_custom_router")


class Store(RouterTrainingStore, OptimizationStore, AnalyticsSnapshotStore):
    """Thread-safe facade over one DuckDB connection (statements are tiny; a lock keeps it simple)."""

    def __init__(self, db_path: Path) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._conn = duckdb.connect(str(db_path))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise DatabaseLocked(
                    f"{db_path} is opened for writing by another process; "
                    "stop it, or talk to it through its owner URL") from exc
            raise
        self._lock = threading.RLock()
        self._closed = False
        # Called with a subject id (a preference id for router training) after a job or router change commits,
        # so the owning process can keep in-memory indexes current without polling (api.custom_router.registry).
        self._listeners: list[Callable[[str], None]] = []
        self.applied_migrations = migrate.apply(self._conn)

    def subscribe(self, listener: Callable[[str], None], resync: Callable[[], object] | None = None) -> None:
        """`listener(subject_id)` after each committed change. `resync` is for RemoteStore's interface: this
        process sees every change, so it never needs one."""
        self._listeners.append(listener)

    def _notify(self, subject_id: str | None) -> None:
        if subject_id is None:
            return
        for listener in self._listeners:
            listener(subject_id)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._conn.execute("CHECKPOINT")
            self._conn.close()

    def _rows(self, sql: str, params: list[Any] | None = None) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params or []).fetchall()

    def _run(self, sql: str, params: list[Any] | None = None) -> None:
        with self._lock:
            self._conn.execute(sql, params or [])

    # --- users and keys -------------------------------------------------------------------------

    @exposed
    def issue_key(self, user_id: str, organization_id: str | None = None, tier: str | None = None,
                  prompt_optimization: bool | None = None, is_admin: bool = False) -> IssuedKey:
        """Create the user if new (defaults: own org, free tier, no prompt optimization), else apply the
        attributes given; then issue a fresh key for them."""
        if not user_id.strip():
            raise StoreError("user id must not be empty")
        plaintext = keyfmt.new_key()
        now = _now()
        with self._lock:
            self._conn.execute("BEGIN TRANSACTION")
            try:
                existing = self._user(user_id)
                if existing is None:
                    self._conn.execute(
                        "INSERT INTO users VALUES (?, ?, ?, ?, ?, ?)",
                        [user_id, organization_id or user_id, tier or "free", bool(prompt_optimization),
                         is_admin, now])
                else:
                    self._conn.execute(
                        "UPDATE users SET organization_id = coalesce(?, organization_id), tier = coalesce(?, tier),"
                        " prompt_optimization = coalesce(?, prompt_optimization), is_admin = is_admin OR ?"
                        " WHERE user_id = ?",
                        [organization_id, tier, prompt_optimization, is_admin, user_id])
                key_id = str(uuid.uuid4())
                self._conn.execute(
                    "INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, NULL)",
                    [key_id, keyfmt.hash_key(plaintext), keyfmt.display_prefix(plaintext), user_id, now])
                self._conn.execute("COMMIT")
            except Exception:
                self._conn.execute("ROLLBACK")
                raise
            user = self._user(user_id)
        assert user is not None
        info = ApiKeyInfo(key_id=key_id, key_prefix=keyfmt.display_prefix(plaintext), user_id=user_id,
                          created_at=now, revoked_at=None)
        return IssuedKey(key=plaintext, info=info, user=user)

    def _user(self, user_id: str) -> User | None:
        rows = self._rows("SELECT user_id, organization_id, tier, prompt_optimization, is_admin FROM users"
                          " WHERE user_id = ?", [user_id])
        return User(*rows[0]) if rows else None

    @exposed
    def user_for_key(self, key_hash: str) -> User | None:
        rows = self._rows(
            "SELECT k.key_hash, u.user_id, u.organization_id, u.tier, u.prompt_optimization, u.is_admin"
            " FROM api_keys k JOIN users u USING (user_id) WHERE k.key_hash = ? AND k.revoked_at IS NULL",
            [key_hash])
        if not rows or not hmac.compare_digest(rows[0][0], key_hash):
            return None
        return User(*rows[0][1:])

    @exposed
    def list_keys(self) -> list[ApiKeyInfo]:
        rows = self._rows("SELECT key_id, key_prefix, user_id, created_at, revoked_at FROM api_keys"
                          " ORDER BY created_at")
        return [ApiKeyInfo(*row) for row in rows]

    @exposed
    def revoke_key(self, key_ref: str) -> ApiKeyInfo:
        """Revoke by key id, by the displayed prefix (if unambiguous), or by the key itself."""
        with self._lock:
            rows = self._rows(
                "SELECT key_id FROM api_keys WHERE key_id = ? OR key_prefix = ? OR key_hash = ?",
                [key_ref, key_ref, keyfmt.hash_key(key_ref)])
            if not rows:
                raise StoreError(f"no API key matches {key_ref!r}; see `switchboard keys list`")
            if len(rows) > 1:
                raise StoreError(f"{key_ref!r} matches {len(rows)} keys; revoke by key id instead")
            self._run("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE key_id = ?",
                      [_now(), rows[0][0]])
            return next(k for k in self.list_keys() if k.key_id == rows[0][0])

    @exposed
    def count_active_keys(self) -> int:
        return self._rows("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL")[0][0]

    # --- preferences ----------------------------------------------------------------------------

    @exposed
    def create_preference(self, user_id: str, name: str) -> Preference:
        pid, now = str(uuid.uuid4()), _now()
        self._run("INSERT INTO preferences VALUES (?, ?, ?, NULL, NULL, NULL, NULL, ?, ?)",
                  [pid, user_id, name, now, now])
        pref = self.get_preference(user_id, pid)
        assert pref is not None
        return pref

    @exposed
    def get_preference(self, user_id: str, preference_id: str) -> Preference | None:
        """None both for unknown ids and for another user's: callers must not learn which."""
        rows = self._rows(f"SELECT {_PREF_COLS} FROM preferences p WHERE preference_id = ? AND user_id = ?",
                          [preference_id, user_id])
        return Preference(*rows[0]) if rows else None

    @exposed
    def list_preferences(self, user_id: str) -> list[Preference]:
        rows = self._rows(f"SELECT {_PREF_COLS} FROM preferences p WHERE user_id = ? ORDER BY created_at",
                          [user_id])
        return [Preference(*row) for row in rows]

    @exposed
    def update_preference(self, user_id: str, preference_id: str, changes: PreferenceChanges) -> Preference | None:
        fields = {f: getattr(changes, f) for f in changes.__struct_fields__}
        given = {f: v for f, v in fields.items() if v is not msgspec.UNSET}
        with self._lock:
            if self.get_preference(user_id, preference_id) is None:
                return None
            if given:
                assignments = ", ".join(f"{f} = ?" for f in given)
                self._run(f"UPDATE preferences SET {assignments}, updated_at = ? WHERE preference_id = ?",
                          [*given.values(), _now(), preference_id])
            updated = self.get_preference(user_id, preference_id)
        self._notify(preference_id)  # API workers cache preferences for the hot path (api.selection.preference_cache)
        return updated

    @exposed
    def delete_preference(self, user_id: str, preference_id: str) -> list[str] | None:
        """Delete the preference and its custom routers. Returns the router artefact paths to remove,
        or None when the caller has no such preference."""
        with self._lock:
            if self.get_preference(user_id, preference_id) is None:
                return None
            self._conn.execute("BEGIN TRANSACTION")
            try:
                paths = [r[0] for r in self._conn.execute(
                    "SELECT artefact_path FROM custom_routers WHERE preference_id = ?", [preference_id]).fetchall()]
                self._conn.execute("DELETE FROM custom_routers WHERE preference_id = ?", [preference_id])
                self._conn.execute("DELETE FROM preferences WHERE preference_id = ?", [preference_id])
                # A training job still running for it must not publish afterwards (publishing needs an open job).
                self._conn.execute(f"UPDATE jobs SET status = 'cancelled', error = 'the preference was deleted',"
                                   f" updated_at = ? WHERE subject_id = ? AND status IN {OPEN_JOB_STATUSES}",
                                   [_now(), preference_id])
                self._conn.execute("COMMIT")
            except Exception:
                self._conn.execute("ROLLBACK")
                raise
        self._notify(preference_id)
        return paths

    # --- jobs -----------------------------------------------------------------------------------

    @exposed
    def create_job(self, kind: str, user_id: str, subject_id: str | None, status: str = "created") -> Job:
        job_id, now = str(uuid.uuid4()), _now()
        self._check_status(status)
        self._run("INSERT INTO jobs VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
                  [job_id, kind, user_id, subject_id, status, now, now])
        job = self.get_job(job_id)
        assert job is not None
        return job

    @exposed
    def get_job(self, job_id: str) -> Job | None:
        rows = self._rows("SELECT * FROM jobs WHERE job_id = ?", [job_id])
        return Job(*rows[0]) if rows else None

    @exposed
    def update_job(self, job_id: str, status: str | None = None, flow_run_id: str | None = None,
                   error: str | None = None, only_if_open: bool = False) -> Job | None:
        """Move a job on. With only_if_open, a job already in a final state is left alone (a late
        housekeeping pass must not overwrite what the flow itself recorded)."""
        if status is not None:
            self._check_status(status)
        guard = f" AND status IN {OPEN_JOB_STATUSES}" if only_if_open else ""
        self._run("UPDATE jobs SET status = coalesce(?, status), flow_run_id = coalesce(?, flow_run_id),"
                  f" error = coalesce(?, error), updated_at = ? WHERE job_id = ?{guard}",
                  [status, flow_run_id, error, _now(), job_id])
        job = self.get_job(job_id)
        if job is not None:
            self._notify(job.subject_id)
        return job

    @exposed
    def open_jobs(self) -> list[Job]:
        rows = self._rows(f"SELECT * FROM jobs WHERE status IN {OPEN_JOB_STATUSES} ORDER BY created_at")
        return [Job(*row) for row in rows]

    @staticmethod
    def _check_status(status: str) -> None:
        if status not in JOB_STATUSES:
            raise StoreError(f"unknown job status {status!r}; expected one of {', '.join(JOB_STATUSES)}")

    @exposed
    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file (housekeeping)."""
        self._run("CHECKPOINT")


def exposed_methods() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    for klass in reversed(Store.__mro__):  # mixins first, so Store's own definitions win
        found.update({name: fn for name, fn in vars(klass).items() if getattr(fn, "__rpc_exposed__", False)})
    return found
