"""Wire schemas of key management, budgets and usage (api/controllers/admin.py, api/controllers/usage.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from storage.budget_records import AuditEntry, Budget, BudgetStatus, KeyDetails

UserId = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class KeyCreateRequest(msgspec.Struct, forbid_unknown_fields=True):
    user_id: UserId
    tier: Literal["free", "starter", "startup", "enterprise"] | None = None
    prompt_optimization: bool | None = None
    is_admin: bool = False


class IssuedKeyResponse(msgspec.Struct):
    """A new key: `key` is shown this once and never stored."""

    key: str
    key_id: str
    key_prefix: str
    user_id: str
    organization_id: str
    created_at: datetime
    replaces_key_id: str | None = None   # a rotation: the old key
    old_key_valid_until: datetime | None = None


class KeyRotateRequest(msgspec.Struct, forbid_unknown_fields=True):
    grace_seconds: float | None = None  # None: SWITCHBOARD_KEY_ROTATION_GRACE_S


class RateLimitRequest(msgspec.Struct, forbid_unknown_fields=True):
    rate_limit_per_minute: int | None  # None: the server's limits; 0: no limit for this key


class BudgetRequest(msgspec.Struct, forbid_unknown_fields=True):
    scope: Literal["key", "user", "organization"]
    subject_id: Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
    period: Literal["day", "month"]
    limit_usd: float | None  # None removes the budget


class KeyList(msgspec.Struct):
    keys: list[KeyDetails]


class BudgetList(msgspec.Struct):
    budgets: list[Budget]


class AuditList(msgspec.Struct):
    entries: list[AuditEntry]
    limit: int
    offset: int


class SpendResponse(msgspec.Struct):
    user_id: str
    key_id: str | None
    budgets: list[BudgetStatus]


class UsageRow(msgspec.Struct):
    day: str
    source: str  # gateway | prompt optimization | judging
    model: str
    key_id: str
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class UsageResponse(msgspec.Struct):
    user_id: str
    rows: list[UsageRow]
    total: int
    limit: int
    offset: int
    next_offset: int | None
