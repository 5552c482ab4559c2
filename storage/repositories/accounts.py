"""Users and API keys in DuckDB. Only a key's SHA-256 is stored; lookups compare hashes in constant time."""

from __future__ import annotations

import hmac
import uuid

from storage import keys as keyfmt
from storage.sql import SqlDatabase, now
from storage.errors import StoreError
from storage.records import ApiKeyInfo, IssuedKey, User, key_subject


class AccountRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    def issue_key(self, user_id: str, organization_id: str | None = None, tier: str | None = None,
                  prompt_optimization: bool | None = None, is_admin: bool = False) -> IssuedKey:
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
            self._db.run("INSERT INTO api_keys VALUES (?, ?, ?, ?, ?, NULL)",
                         [key_id, keyfmt.hash_key(plaintext), keyfmt.display_prefix(plaintext), user_id, created])
        user = self._user(user_id)
        assert user is not None
        info = ApiKeyInfo(key_id=key_id, key_prefix=keyfmt.display_prefix(plaintext), user_id=user_id,
                          created_at=created, revoked_at=None)
        return IssuedKey(key=plaintext, info=info, user=user)

    def _user(self, user_id: str) -> User | None:
        rows = self._db.rows("SELECT user_id, organization_id, tier, prompt_optimization, is_admin FROM users"
                             " WHERE user_id = ?", [user_id])
        return User(*rows[0]) if rows else None

    def user_for_key(self, key_hash: str) -> User | None:
        rows = self._db.rows(
            "SELECT k.key_hash, u.user_id, u.organization_id, u.tier, u.prompt_optimization, u.is_admin"
            " FROM api_keys k JOIN users u USING (user_id) WHERE k.key_hash = ? AND k.revoked_at IS NULL",
            [key_hash])
        if not rows or not hmac.compare_digest(rows[0][0], key_hash):
            return None
        return User(*rows[0][1:])

    def list_keys(self) -> list[ApiKeyInfo]:
        rows = self._db.rows("SELECT key_id, key_prefix, user_id, created_at, revoked_at FROM api_keys"
                             " ORDER BY created_at")
        return [ApiKeyInfo(*row) for row in rows]

    def revoke_key(self, key_ref: str) -> ApiKeyInfo:
        with self._db.transaction():
            rows = self._db.rows("SELECT key_id, key_hash FROM api_keys WHERE key_id = ? OR key_prefix = ?"
                                 " OR key_hash = ?", [key_ref, key_ref, keyfmt.hash_key(key_ref)])
            if not rows:
                raise StoreError(f"no API key matches {key_ref!r}; see `switchboard keys list`")
            if len(rows) > 1:
                raise StoreError(f"{key_ref!r} matches {len(rows)} keys; revoke by key id instead")
            self._db.run("UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE key_id = ?",
                         [now(), rows[0][0]])
            info = next(k for k in self.list_keys() if k.key_id == rows[0][0])
            # Every API worker drops the key from its auth cache: at once here, and elsewhere through the change
            # feed (the owner's, polled; PostgreSQL's NOTIFY, pushed).
            self._db.notify(key_subject(rows[0][1]))
        return info

    def count_active_keys(self) -> int:
        return self._db.rows("SELECT count(*) FROM api_keys WHERE revoked_at IS NULL")[0][0]
