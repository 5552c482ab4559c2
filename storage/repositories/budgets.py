"""Budgets and spend counters, on either engine. A call reserves its worst-case cost before it reaches a provider and
settles the real cost after; the check and the reservation are one transaction under one lock per organization
(docs/architecture.md, rule 6), so API workers and flow runs in any number of processes cannot together pass a
budget by more than what one call's reservation under-estimates."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from storage.budget_records import (PERIODS, SCOPES, Budget, BudgetStatus, Reservation, Settlement, Spender,
                                    resets_at, windows)
from storage.errors import StoreError
from storage.repositories.audit import record_audit
from storage.sql import SqlDatabase, now

# A reservation older than this belongs to a call that can no longer be under way (the gateway's upstream timeouts
# and a flow's LM timeout are far shorter): its process died before settling, so it stops counting.
STALE_RESERVATION = timedelta(minutes=15)


def _lock(organization_id: str) -> str:
    return f"budget:{organization_id}"


# The budget_reservations column that names each scope's subject (fixed names: safe in the SQL text).
_RESERVATION_COLUMN = {"key": "key_id", "user": "user_id", "organization": "organization_id"}


def _subjects(spender: Spender) -> list[tuple[str, str]]:
    found = [("user", spender.user_id), ("organization", spender.organization_id)]
    return ([("key", spender.key_id)] if spender.key_id else []) + found


class BudgetRepository:
    def __init__(self, db: SqlDatabase) -> None:
        self._db = db

    # --- what an admin sets ---------------------------------------------------------------------------------------

    def set_budget(self, actor: str, organization_id: str, scope: str, subject_id: str, period: str,
                   limit_usd: float | None) -> Budget | None:
        """Set (or, with limit_usd None, remove) a budget; recorded in the audit table with its actor."""
        if scope not in SCOPES or period not in PERIODS:
            raise StoreError(f"scope must be one of {SCOPES} and period one of {PERIODS}")
        if limit_usd is not None and not limit_usd >= 0:
            raise StoreError("a budget's limit must be a number of USD >= 0")
        at = now()
        with self._db.transaction():
            self._db.run("DELETE FROM budgets WHERE scope = ? AND subject_id = ? AND period = ?",
                         [scope, subject_id, period])
            if limit_usd is not None:
                self._db.run("INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?, ?)",
                             [scope, subject_id, period, float(limit_usd), organization_id, at, actor])
            record_audit(self._db, actor, organization_id, "budget.set" if limit_usd is not None else "budget.remove",
                         key_id=subject_id if scope == "key" else None,
                         subject_user_id=subject_id if scope == "user" else None,
                         detail=f"{scope} {subject_id} {period} limit_usd={limit_usd}")
        if limit_usd is None:
            return None
        return Budget(scope, subject_id, period, float(limit_usd), organization_id, at, actor)

    def budgets(self, organization_id: str) -> list[Budget]:
        rows = self._db.rows("SELECT scope, subject_id, period, limit_usd, organization_id, updated_at, updated_by"
                             " FROM budgets WHERE organization_id = ? ORDER BY scope, subject_id, period",
                             [organization_id])
        return [Budget(*row) for row in rows]

    # --- the spend path ---------------------------------------------------------------------------------------------

    def reserve(self, spender: Spender, amount_usd: float) -> Reservation:
        """Check every budget of the key, its user and their organization against settled spend + the reservations
        of calls under way + this call's worst case; reserve it when all pass, else name the first budget it would
        exceed (nothing reserved). With no budget at all nothing is reserved: the call only settles its spend."""
        at = now()
        current = windows(at)
        amount = max(0.0, float(amount_usd))
        with self._db.transaction():
            self._db.serialize(_lock(spender.organization_id))
            statuses = self._statuses(spender, at, current)
            if not statuses:  # read only: the common case of no budget costs no write
                return Reservation(None, 0.0, current["day"], current["month"])
            for status in statuses:
                if status.spent_usd + status.reserved_usd + amount > status.limit_usd:
                    return Reservation(None, 0.0, current["day"], current["month"], refused=status)
            self._db.run("DELETE FROM budget_reservations WHERE organization_id = ? AND created_at < ?",
                         [spender.organization_id, at - STALE_RESERVATION])
            reservation_id = str(uuid.uuid4())
            self._db.run("INSERT INTO budget_reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [reservation_id, spender.key_id or "", spender.user_id, spender.organization_id, amount,
                          current["day"], current["month"], at])
        return Reservation(reservation_id, amount, current["day"], current["month"])

    def settle(self, spender: Spender, reservation: Reservation, cost_usd: float) -> None:
        """The call ended: release its reservation (if still held) and count its real cost in its windows."""
        self.settle_many([Settlement(spender, reservation, cost_usd)])

    def settle_many(self, settlements: list[Settlement]) -> None:
        """Several ended calls in one transaction (the API settles in batches: one commit, not one per call). The
        organizations' locks are taken in order, so two batches never wait on each other in a cycle."""
        with self._db.transaction():
            for organization_id in sorted({s.spender.organization_id for s in settlements}):
                self._db.serialize(_lock(organization_id))
            spent: dict[tuple[str, str, str, str], float] = {}
            for item in settlements:
                if item.reservation.reservation_id is not None:
                    self._db.run("DELETE FROM budget_reservations WHERE reservation_id = ?",
                                 [item.reservation.reservation_id])
                cost = max(0.0, float(item.cost_usd))
                if cost:
                    held = {"day": item.reservation.day, "month": item.reservation.month}
                    for scope, subject in _subjects(item.spender):
                        for period in PERIODS:
                            slot = (scope, subject, period, held[period])
                            spent[slot] = spent.get(slot, 0.0) + cost
            for (scope, subject, period, window), cost in sorted(spent.items()):
                self._db.run(
                    "INSERT INTO spend VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, subject_id, period, window_start)"
                    " DO UPDATE SET spent_usd = spend.spent_usd + excluded.spent_usd",
                    [scope, subject, period, window, cost])

    def status(self, spender: Spender) -> list[BudgetStatus]:
        """The budgets that apply to this key, its user and their organization, with the current windows' spend."""
        at = now()
        return self._statuses(spender, at, windows(at))

    # --- inside -----------------------------------------------------------------------------------------------------

    def _statuses(self, spender: Spender, at: datetime, current: dict[str, str]) -> list[BudgetStatus]:
        out = []
        for scope, subject in _subjects(spender):
            budgets = self._db.rows("SELECT period, limit_usd FROM budgets WHERE scope = ? AND subject_id = ?"
                                    " ORDER BY period", [scope, subject])
            for period, limit in budgets:
                found = self._db.rows("SELECT spent_usd FROM spend WHERE scope = ? AND subject_id = ? AND period = ?"
                                      " AND window_start = ?", [scope, subject, period, current[period]])
                spent = found[0][0] if found else 0.0
                column = _RESERVATION_COLUMN[scope]
                reserved = self._db.rows(
                    f"SELECT coalesce(sum(amount_usd), 0) FROM budget_reservations WHERE organization_id = ?"
                    f" AND {column} = ? AND {period} = ? AND created_at >= ?",
                    [spender.organization_id, subject, current[period], at - STALE_RESERVATION])[0][0]
                out.append(BudgetStatus(scope, subject, period, limit, spent, reserved,
                                        max(0.0, limit - spent - reserved), resets_at(period, at)))
        return out
