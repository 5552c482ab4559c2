"""Key and budget management, for admin keys over HTTP (api/controllers/admin.py) and for the server's CLI
(`switchboard keys ...`): one service, so both apply the same rules and the same audit.

An admin key manages the keys, users and budgets of its own organization only: another organization's key looks
unknown (404), as another user's preference does. The CLI acts as the server's operator (actor `cli`), across
organizations. Every change is written to the audit table with who made it (storage/repositories/audit.py)."""

from __future__ import annotations

import math

from api.errors import Forbidden, NotFound, ValidationFailed
from storage.budget_records import PERIODS, SCOPES, AuditEntry, Budget, KeyDetails
from storage.interfaces import Store
from storage.records import TIERS, IssuedKey, User

CLI_ACTOR = "cli"
MAX_RATE_LIMIT_PER_MINUTE = 10_000_000


def actor_of(admin: User | None) -> str:
    """The audit's `actor`: the admin's user and key, or the CLI."""
    return CLI_ACTOR if admin is None else f"{admin.user_id} (key {admin.key_id})"


def require_admin(user: User) -> User:
    if not user.is_admin:
        raise Forbidden("this route needs an admin API key; ask an admin of your organization",
                        code="ADMIN_REQUIRED")
    return user


class KeyAdminService:
    def __init__(self, store: Store, rotation_grace_s: float) -> None:
        self.store, self.rotation_grace_s = store, rotation_grace_s

    # --- keys -------------------------------------------------------------------------------------------------------

    def create(self, admin: User | None, user_id: str, organization_id: str | None = None, tier: str | None = None,
               prompt_optimization: bool | None = None, is_admin: bool = False) -> IssuedKey:
        """A new key for `user_id` (creating the user if new). An admin's new users join its organization; a user
        of another organization cannot be given a key by it."""
        if not user_id.strip() or len(user_id) > 200:
            raise ValidationFailed("user id must not be empty (1 to 200 characters)", code="INVALID_USER_ID")
        if tier is not None and tier not in TIERS:
            raise ValidationFailed(f"tier must be one of {', '.join(TIERS)}", code="INVALID_TIER")
        if admin is not None:
            if organization_id not in (None, admin.organization_id):
                raise Forbidden("an admin key creates keys in its own organization only", code="OTHER_ORGANIZATION")
            existing = self.store.accounts.user(user_id)
            if existing is not None and existing.organization_id != admin.organization_id:
                raise NotFound("no such user in your organization", code="USER_NOT_FOUND")
            organization_id = admin.organization_id
        return self.store.accounts.issue_key(user_id, organization_id=organization_id, tier=tier,
                                             prompt_optimization=prompt_optimization, is_admin=is_admin,
                                             actor=actor_of(admin))

    def keys(self, admin: User | None) -> list[KeyDetails]:
        return self.store.accounts.key_details(None if admin is None else admin.organization_id)

    def key(self, admin: User | None, key_id: str) -> KeyDetails:
        found = self.store.accounts.key(key_id)
        if found is None or (admin is not None and found.organization_id != admin.organization_id):
            raise NotFound(f"no API key {key_id!r} in your organization", code="KEY_NOT_FOUND")
        return found

    def revoke(self, admin: User | None, key_id: str) -> KeyDetails:
        self.key(admin, key_id)
        self.store.accounts.revoke_key(key_id, actor=actor_of(admin))
        return self.key(admin, key_id)

    def rotate(self, admin: User | None, key_id: str, grace_seconds: float | None = None) -> IssuedKey:
        grace = self.rotation_grace_s if grace_seconds is None else grace_seconds
        if not (math.isfinite(grace) and 0 <= grace <= 90 * 86_400):
            raise ValidationFailed("grace_seconds must be between 0 and 7776000 (90 days)", code="INVALID_GRACE")
        found = self.key(admin, key_id)
        if found.revoked_at is not None:
            raise ValidationFailed(f"key {key_id!r} is revoked; create a new key instead", code="KEY_REVOKED")
        return self.store.accounts.rotate_key(key_id, grace, actor=actor_of(admin))

    def set_rate_limit(self, admin: User | None, key_id: str, per_minute: int | None) -> KeyDetails:
        if per_minute is not None and not 0 <= per_minute <= MAX_RATE_LIMIT_PER_MINUTE:
            raise ValidationFailed(f"rate_limit_per_minute must be between 0 and {MAX_RATE_LIMIT_PER_MINUTE} "
                                   "(0: no limit; null: the server's)", code="INVALID_RATE_LIMIT")
        self.key(admin, key_id)
        return self.store.accounts.set_rate_limit(key_id, per_minute, actor=actor_of(admin))

    def audit(self, admin: User, limit: int, offset: int) -> list[AuditEntry]:
        return self.store.accounts.audit(admin.organization_id, limit, offset)

    # --- budgets ----------------------------------------------------------------------------------------------------

    def set_budget(self, admin: User | None, scope: str, subject_id: str, period: str,
                   limit_usd: float | None, organization_id: str | None = None) -> Budget | None:
        if scope not in SCOPES:
            raise ValidationFailed(f"scope must be one of {', '.join(SCOPES)}", code="INVALID_BUDGET")
        if period not in PERIODS:
            raise ValidationFailed(f"period must be one of {', '.join(PERIODS)}", code="INVALID_BUDGET")
        if limit_usd is not None and not (math.isfinite(limit_usd) and limit_usd >= 0):
            raise ValidationFailed(f"limit_usd must be a number of USD >= 0 (null removes the budget); got "
                                   f"{limit_usd}", code="INVALID_BUDGET")
        org = self._organization_of(admin, scope, subject_id, organization_id)
        return self.store.budgets.set_budget(actor_of(admin), org, scope, subject_id, period, limit_usd)

    def budgets(self, admin: User) -> list[Budget]:
        return self.store.budgets.budgets(admin.organization_id)

    def _organization_of(self, admin: User | None, scope: str, subject_id: str, organization_id: str | None) -> str:
        """The organization the budget's subject belongs to; an admin's own only."""
        if scope == "key":
            org = self.key(admin, subject_id).organization_id
        elif scope == "user":
            user = self.store.accounts.user(subject_id)
            if user is None or (admin is not None and user.organization_id != admin.organization_id):
                raise NotFound("no such user in your organization", code="USER_NOT_FOUND")
            org = user.organization_id
        else:
            org = subject_id
            if admin is not None and org != admin.organization_id:
                raise NotFound("no such organization: an admin key sets its own organization's budgets",
                               code="ORGANIZATION_NOT_FOUND")
        if organization_id is not None and organization_id != org:
            raise ValidationFailed(f"{scope} {subject_id!r} is not in organization {organization_id!r}",
                                   code="INVALID_BUDGET")
        return org
