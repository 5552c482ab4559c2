"""Users and API keys, on either engine. Only a key's SHA-256 is stored; lookups compare hashes in constant time.
Every change to a key is recorded in the audit table with who made it (storage/repositories/audit.py)."""

from __future__ import annotations

import hmac
import uuid
from datetime import timedelta

from storage import keys as keyfmt
from storage.sql import SqlDatabase, now
from storage.errors import StoreError
from storage.budget_records import AuditEntry, KeyDetails, windows
from storage.records import ApiKeyInfo, IssuedKey, User, key_subject
from storage.repositories.audit import audit_log, record_audit

CLI_ACTOR = "cli"  # changes made on the server's machine with `switchboard keys ...`
_DETAILS = (
    "SELECT k.key_id, k.key_prefix, k.user_id, u.organization_id, k.created_at, k.revoked_at, k.expires_at,"
    " k.last_used_at, k.rate_limit_per_minute, coalesce(d.spent_usd, 0), coalesce(m.spent_usd, 0), u.is_admin"
    " FROM api_keys k JOIN users u USING (user_id)"
    " LEFT JOIN spend d ON d.scope = 'key' AND d.subject_id = k.key_id AND d.period = 'day' AND d.window_start = ?"
    " LEFT JOIN spend m ON m.scope = 'key' AND m.subject_id = k.key_id AND m.period = 'month' AND m.window_start = ?")


class AccountRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def issue_key(self, user_id: str, organization_id: str | None = None, tier: str | None = None,
                  prompt_optimization: bool | None = None, is_admin: bool = False,
                  actor: str = CLI_ACTOR) -> IssuedKey:
        if not user_id.strip():
            raise StoreError("user id must not be empty")
        plaintext = keyfmt.new_key()
        key_id, created = str(uuid.uuid4()), now()
        with self._db.transaction():
            self._db.serialize(f"user:{user_id}")  # two first keys of a new user at once: one creates it
            if self._user(user_id) is None:
                self._db.run("INSERT INTO users VALUES (?, ?, ?, ?, ?, ?)",
                             [user_id, organization_id or user_id, tier or "free", bool(prompt_optimization),
                              is_admin, created])
            else:
                self._db.run(
                    "UPDATE users SET organization_id = coalesce(?, organization_id), tier = coalesce(?, tier),"
                    " prompt_optimization = coalesce(?, prompt_optimization), is_admin = is_admin OR ?"
                    " WHERE user_id = ?", [organization_id, tier, prompt_optimization, is_admin, user_id])
            self._insert_key(key_id, plaintext, user_id, created, actor, None)
            org = self._user(user_id)
            assert org is not None
            record_audit(self._db, actor, org.organization_id, "key.create", key_id=key_id, subject_user_id=user_id,
                         detail="admin" if is_admin else None)
        user = self._user(user_id, key_id)
        assert user is not None
        info = ApiKeyInfo(key_id=key_id, key_prefix=keyfmt.display_prefix(plaintext), user_id=user_id,
                          created_at=created, revoked_at=None)
        return IssuedKey(key=plaintext, info=info, user=user)

    def _insert_key(self, key_id: str, plaintext: str, user_id: str, created: object, actor: str,
                    rate_limit_per_minute: int | None) -> None:
        self._db.run("INSERT INTO api_keys (key_id, key_hash, key_prefix, user_id, created_at, revoked_at,"
                     " rate_limit_per_minute, created_by) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)",
                     [key_id, keyfmt.hash_key(plaintext), keyfmt.display_prefix(plaintext), user_id, created,
                      rate_limit_per_minute, actor])

    def _user(self, user_id: str, key_id: str | None = None) -> User | None:
        """The user; with key_id, as that key of theirs authenticates them (IssuedKey.user)."""
        rows = self._db.rows("SELECT user_id, organization_id, tier, prompt_optimization, is_admin FROM users"
                             " WHERE user_id = ?", [user_id])
        if not rows:
            return None
        user_id, organization_id, tier, prompt_optimization, is_admin = rows[0]
        return User(user_id, organization_id, tier, prompt_optimization, is_admin, key_id=key_id)

    def user(self, user_id: str) -> User | None:
        return self._user(user_id)

    def user_for_key(self, key_hash: str) -> User | None:
        at = now()
        rows = self._db.rows(
            "SELECT k.key_hash, u.user_id, u.organization_id, u.tier, u.prompt_optimization, u.is_admin, k.key_id,"
            " k.rate_limit_per_minute FROM api_keys k JOIN users u USING (user_id)"
            " WHERE k.key_hash = ? AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ?)",
            [key_hash, at])
        if not rows or not hmac.compare_digest(rows[0][0], key_hash):
            return None
        # Looked up once per auth-cache period per worker (api/auth_cache.py), so "last used" is that precise.
        self._db.run("UPDATE api_keys SET last_used_at = ? WHERE key_id = ?", [at, rows[0][6]])
        return User(*rows[0][1:])

    def key_details(self, organization_id: str | None = None) -> list[KeyDetails]:
        """Every key (of one organization, when given) with its last use and this day's and month's spend."""
        current = windows(now())
        where, params = (" WHERE u.organization_id = ?", [organization_id]) if organization_id else ("", [])
        rows = self._db.rows(_DETAILS + where + " ORDER BY k.created_at, k.key_id",
                             [current["day"], current["month"], *params])
        return [KeyDetails(*row) for row in rows]

    def key(self, key_id: str) -> KeyDetails | None:
        current = windows(now())
        rows = self._db.rows(_DETAILS + " WHERE k.key_id = ?", [current["day"], current["month"], key_id])
        return KeyDetails(*rows[0]) if rows else None

    def rotate_key(self, key_id: str, grace_seconds: float, actor: str = CLI_ACTOR) -> IssuedKey:
        """A new key for the same user (same rate limit); the old one keeps working for `grace_seconds`."""
        plaintext, new_id, at = keyfmt.new_key(), str(uuid.uuid4()), now()
        with self._db.transaction():
            rows = self._db.rows("SELECT k.user_id, u.organization_id, k.rate_limit_per_minute, k.key_hash"
                                 " FROM api_keys k JOIN users u USING (user_id)"
                                 " WHERE k.key_id = ? AND k.revoked_at IS NULL" + self._db.FOR_UPDATE, [key_id])
            if not rows:
                raise StoreError(f"no active API key with id {key_id!r}")
            user_id, org, limit, old_hash = rows[0]
            until = at + timedelta(seconds=max(0.0, grace_seconds))
            self._db.run("UPDATE api_keys SET expires_at = CASE WHEN expires_at IS NULL OR expires_at > ? THEN ?"
                         " ELSE expires_at END WHERE key_id = ?", [until, until, key_id])
            self._insert_key(new_id, plaintext, user_id, at, actor, limit)
            record_audit(self._db, actor, org, "key.rotate", key_id=key_id, subject_user_id=user_id,
                         detail=f"new key {new_id}; old key valid until {until.isoformat()}")
            self._db.notify(key_subject(old_hash))  # cached copies pick up the expiry
        user = self._user(user_id, new_id)
        assert user is not None
        info = ApiKeyInfo(key_id=new_id, key_prefix=keyfmt.display_prefix(plaintext), user_id=user_id,
                          created_at=at, revoked_at=None)
        return IssuedKey(key=plaintext, info=info, user=user)

    def set_rate_limit(self, key_id: str, per_minute: int | None, actor: str = CLI_ACTOR) -> KeyDetails:
        """The key's own per-minute limit on every endpoint class (None: the server's; 0: none)."""
        if per_minute is not None and per_minute < 0:
            raise StoreError("a rate limit is a number of requests a minute >= 0")
        with self._db.transaction():
            found = self.key(key_id)
            if found is None:
                raise StoreError(f"no API key with id {key_id!r}")
            self._db.run("UPDATE api_keys SET rate_limit_per_minute = ? WHERE key_id = ?", [per_minute, key_id])
            record_audit(self._db, actor, found.organization_id, "key.rate_limit", key_id=key_id,
                         subject_user_id=found.user_id, detail=f"rate_limit_per_minute={per_minute}")
            hashes = self._db.rows("SELECT key_hash FROM api_keys WHERE key_id = ?", [key_id])
            self._db.notify(key_subject(hashes[0][0]))
        updated = self.key(key_id)
        assert updated is not None
        return updated

    def audit(self, organization_id: str, limit: int = 100, offset: int = 0) -> list[AuditEntry]:
        return audit_log(self._db, organization_id, limit, offset)

    def list_keys(self) -> list[ApiKeyInfo]:
        rows = self._db.rows("SELECT key_id, key_prefix, user_id, created_at, revoked_at FROM api_keys"
                             " ORDER BY created_at")
        return [ApiKeyInfo(*row) for row in rows]

    def revoke_key(self, key_ref: str, actor: str = CLI_ACTOR) -> ApiKeyInfo:
        with self._db.transaction():
            rows = self._db.rows("SELECT k.key_id, k.key_hash, u.organization_id, k.user_id FROM api_keys k"
                                 " JOIN users u USING (user_id) WHERE k.key_id = ? OR k.key_prefix = ?"
                                 " OR k.key_hash = ?", [key_ref, key_ref, keyfmt.hash_key(key_ref)])
            if not rows:
                raise StoreError(f"no API key matches {key_ref!r}; see `switchboard keys list`")
            if len(rows) > 1:
                raise StoreError(f"{key_ref!r} matches {len(rows)} keys; revoke by key id instead")
            self._db.run("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE key_id = ?",
                         [now(), rows[0][0]])
            record_audit(self._db, actor, rows[0][2], "key.revoke", key_id=rows[0][0], subject_user_id=rows[0][3])
            info = next(k for k in self.list_keys() if k.key_id == rows[0][0])
            # Every API worker drops the key from its auth cache: at once here, and elsewhere through the change
            # feed (the owner's, polled; PostgreSQL's NOTIFY, pushed).
            self._db.notify(key_subject(rows[0][1]))
        return info

    def count_active_keys(self) -> int:
        return self._db.rows("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL")[0][0]
