"""A caller's own usage and spend over HTTP (api/controllers/usage.py): the budgets that apply to its key with what
is left of them (from the store), and its usage by day, model and key (from the event logs: gateway calls and the
LLM usage of prompt optimization and judging), paged. An admin key may read any user of its organization; a
non-admin key reads only its own user's."""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from typing import Any

import pyarrow.compute as pc
import pyarrow.dataset as ds

from api.budgets import spender_of
from api.errors import NotFound
from storage import events
from storage.budget_records import BudgetStatus, Spender
from storage.event_schemas import GATEWAY_CALL_SCHEMA, USAGE_SCHEMA
from storage.interfaces import Store
from storage.records import User

# Which spend an llm_usage row is (its task type); gateway calls are "gateway".
SOURCES = {"judge_traffic": "judging", "shadow_call": "judging"}


class UsageService:
    def __init__(self, store: Store, events_dir: events.EventsDir) -> None:
        self.store, self.events_dir = store, events_dir

    def subject(self, caller: User, user_id: str | None) -> tuple[str, Spender | None]:
        """The user whose usage is read: the caller's own, or (admin keys only) another user of its organization.
        The Spender is the caller's key when it reads itself (its key's budgets apply), else the other user's."""
        if user_id is None or user_id == caller.user_id:
            return caller.user_id, spender_of(caller)
        other = self.store.accounts.user(user_id) if caller.is_admin else None
        if other is None or other.organization_id != caller.organization_id:
            raise NotFound("no such user in your organization", code="USER_NOT_FOUND")
        return other.user_id, Spender(None, other.user_id, other.organization_id)

    def budgets(self, caller: User, user_id: str | None = None) -> tuple[str, list[BudgetStatus]]:
        who, spender = self.subject(caller, user_id)
        assert spender is not None
        return who, self.store.budgets.status(spender)

    def usage(self, caller: User, user_id: str | None, since: date | None, until: date | None, limit: int,
              offset: int) -> tuple[str, list[dict[str, Any]], int]:
        """Rows (day, source, model, key_id, requests, input/output tokens, cost), newest day first; and the total
        number of rows, for paging."""
        who, _ = self.subject(caller, user_id)
        totals: dict[tuple, list[float]] = defaultdict(lambda: [0, 0, 0, 0.0])
        for row in self._gateway(who, since, until):
            if row["answered"] is not None:  # as spend_daily (storage/analytics_views.sql): calls that cost
                self._add(totals, row, "gateway", row["answered"])
        for row in self._llm_usage(who, since, until):
            model = f"{row['provider']}/{row['model']}"
            self._add(totals, row, SOURCES.get(row["task_type"] or "", "prompt optimization"), model)
        ordered = sorted(totals.items(), key=lambda item: (item[0][0], item[0][1:]), reverse=True)
        page = [{"day": day.isoformat(), "source": source, "model": model, "key_id": key_id,
                 "requests": int(t[0]), "input_tokens": int(t[1]), "output_tokens": int(t[2]),
                 "cost_usd": round(t[3], 10)}
                for (day, source, model, key_id), t in ordered[offset: offset + limit]]
        return who, page, len(ordered)

    @staticmethod
    def _add(totals: dict, row: dict[str, Any], source: str, model: str) -> None:
        slot = totals[(row["day"], source, model, row["key_id"] or "")]
        slot[0] += 1
        slot[1] += row["input_tokens"] or 0
        slot[2] += row["output_tokens"] or 0
        slot[3] += row["cost"] or 0.0

    def _filter(self, who: str, since: date | None, until: date | None) -> Any:
        where = ds.field("user_id") == who
        if since is not None:
            where = where & (ds.field("day") >= pc.scalar(since))
        if until is not None:
            where = where & (ds.field("day") <= pc.scalar(until))
        return where

    def _gateway(self, who: str, since: date | None, until: date | None) -> list[dict[str, Any]]:
        if not events.parts(self.events_dir, "gateway_calls"):
            return []
        logged = events.dataset(self.events_dir, "gateway_calls", GATEWAY_CALL_SCHEMA)
        table = logged.to_table(columns=["day", "key_id", "answered", "input_tokens", "output_tokens", "cost_usd"],
                                filter=self._filter(who, since, until))
        return table.rename_columns(["day", "key_id", "answered", "input_tokens", "output_tokens",
                                     "cost"]).to_pylist()

    def _llm_usage(self, who: str, since: date | None, until: date | None) -> list[dict[str, Any]]:
        if not events.parts(self.events_dir, "llm_usage"):
            return []
        logged = events.dataset(self.events_dir, "llm_usage", USAGE_SCHEMA)
        table = logged.to_table(columns=["day", "key_id", "provider", "model", "task_type", "input_tokens",
                                         "output_tokens", "total_cost"], filter=self._filter(who, since, until))
        return table.rename_columns(["day", "key_id", "provider", "model", "task_type", "input_tokens",
                                     "output_tokens", "cost"]).to_pylist()
