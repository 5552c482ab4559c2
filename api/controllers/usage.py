"""A caller's own spend, budgets and usage (api/usage.py). An admin key may name another user of its
organization (`user_id`); it reads, and cannot change, their spend."""

from __future__ import annotations

from datetime import date

from litestar import Controller, get
from litestar.di import NamedDependency
from litestar.params import FromQuery

from api.dependencies import component
from api.auth import SECURITY
from api.errors import ValidationFailed
from api.openapi_docs import error_responses
from api.schemas.admin import SpendResponse, UsageResponse, UsageRow
from api.usage import UsageService
from storage.records import User

MAX_PAGE = 1000


def _day(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValidationFailed(f"{name} must be a date, YYYY-MM-DD; got {value[:40]!r}", code="INVALID_DATE") from None


class UsageController(Controller):
    path = "/usage"
    tags = ["usage"]
    security = SECURITY
    dependencies = {"usage": component("usage")}

    @get("/spend", operation_id="usageSpend", summary="Spend and what is left of each budget that applies",
         responses=error_responses(404), sync_to_thread=True)
    def spend(self, user: NamedDependency[User], usage: NamedDependency[UsageService],
              user_id: FromQuery[str | None] = None) -> SpendResponse:
        who, budgets = usage.budgets(user, user_id)
        return SpendResponse(user_id=who, key_id=user.key_id if who == user.user_id else None, budgets=budgets)

    @get("", operation_id="usage", summary="Usage and spend by day, model and key, newest first (paged)",
         responses=error_responses(404), sync_to_thread=True)
    def usage(self, user: NamedDependency[User], usage: NamedDependency[UsageService],
              user_id: FromQuery[str | None] = None, since: FromQuery[str | None] = None,
              until: FromQuery[str | None] = None, limit: FromQuery[int] = 100,
              offset: FromQuery[int] = 0) -> UsageResponse:
        if not 1 <= limit <= MAX_PAGE or offset < 0:
            raise ValidationFailed(f"limit must be 1..{MAX_PAGE} and offset >= 0", code="INVALID_PAGE")
        who, rows, total = usage.usage(user, user_id, _day(since, "since"), _day(until, "until"), limit, offset)
        return UsageResponse(user_id=who, rows=[UsageRow(**row) for row in rows], total=total, limit=limit,
                             offset=offset, next_offset=offset + limit if offset + limit < total else None)
