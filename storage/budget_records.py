"""Records of budgets, spend, and key management (issue 34). msgspec Structs so they cross the owner RPC unchanged."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import msgspec

SCOPES: tuple[str, ...] = ("key", "user", "organization")
PERIODS: tuple[str, ...] = ("day", "month")


def windows(at: datetime) -> dict[str, str]:
    """The UTC windows `at` falls in: {'day': '2026-11-27', 'month': '2026-11'}."""
    at = at.astimezone(timezone.utc)
    return {"day": at.strftime("%Y-%m-%d"), "month": at.strftime("%Y-%m")}


def resets_at(period: str, at: datetime) -> datetime:
    """When the window of `period` holding `at` ends (the next 00:00 UTC, or the first of the next month)."""
    at = at.astimezone(timezone.utc)
    day = at.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return day + timedelta(days=1)
    first = day.replace(day=1)
    return first.replace(year=first.year + 1, month=1) if first.month == 12 else first.replace(month=first.month + 1)


class Budget(msgspec.Struct, frozen=True):
    scope: str       # key | user | organization
    subject_id: str  # a key id, a user id or an organization id
    period: str      # day | month (UTC)
    limit_usd: float
    organization_id: str
    updated_at: datetime
    updated_by: str


class BudgetStatus(msgspec.Struct, frozen=True):
    """A budget that applies to a caller, with the current window's spend."""

    scope: str
    subject_id: str
    period: str
    limit_usd: float
    spent_usd: float
    reserved_usd: float  # calls under way, at their worst case
    remaining_usd: float
    resets_at: datetime


class Spender(msgspec.Struct, frozen=True):
    """Whom a call is billed to: each of the three has its own budgets and spend counters."""

    key_id: str | None  # None: spend made without a key (a flow run started before keys were recorded)
    user_id: str
    organization_id: str


class Reservation(msgspec.Struct, frozen=True):
    """What a check granted. reservation_id None: no budget applied, nothing reserved (spend is still settled).
    refused: the budget that the call would have exceeded (then nothing is reserved and no provider is called)."""

    reservation_id: str | None
    amount_usd: float
    day: str
    month: str
    refused: BudgetStatus | None = None


class Settlement(msgspec.Struct, frozen=True):
    """A call that ended: its reservation to release and its real cost."""

    spender: Spender
    reservation: Reservation
    cost_usd: float


class KeyDetails(msgspec.Struct, frozen=True):
    """One key as an admin lists it: never the key, only its prefix."""

    key_id: str
    key_prefix: str
    user_id: str
    organization_id: str
    created_at: datetime
    revoked_at: datetime | None
    expires_at: datetime | None  # a rotated key: valid until then
    last_used_at: datetime | None
    rate_limit_per_minute: int | None
    spent_today_usd: float
    spent_month_usd: float
    is_admin: bool


class AuditEntry(msgspec.Struct, frozen=True):
    audit_id: str
    at: datetime
    actor: str
    organization_id: str
    action: str
    key_id: str | None
    subject_user_id: str | None
    detail: str | None
