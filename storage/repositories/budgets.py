"""Budgets and spend counters, on either engine. A call reserves its worst-case cost before it reaches a provider and
settles the real cost after; the check and the reservation are one transaction under one lock per organization
(docs/architecture.md, rule 6), so API workers and flow runs in any number of processes cannot together pass a
budget by more than what one call's reservation under-estimates."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from storage.budget_records import (PERIODS, SCOPES, Budget, BudgetStatus, Reservation, Spender, resets_at,
                                    windows)
from storage.errors import StoreError
from storage.repositories.audit import record_audit
from storage.sql import SqlDatabase, now

# A reservation older than this belongs to a call that can no longer be under way (the gateway's upstream timeouts
# and a flow's LM timeout are far shorter): its process died before settling, so the amount is released.
STALE_RESERVATION = timedelta(minutes=15)


def _lock(organization_id: str) -> str:
    return f"budget:{organization_id}"


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
        """Check every budget of the key, its user and their organization against spend + reservations + this
        call's worst case; reserve it when all pass, else name the first budget it would exceed (nothing reserved).
        With no budget at all nothing is reserved, and the call only settles its spend."""
        at = now()
        current = windows(at)
        amount = max(0.0, float(amount_usd))
        with self._db.transaction():
            self._db.serialize(_lock(spender.organization_id))
            self._release_stale(spender.organization_id, at)
            statuses = self._statuses(spender, at, current)
            if not statuses:
                return Reservation(None, 0.0, current["day"], current["month"])
            for status in statuses:
                if status.spent_usd + status.reserved_usd + amount > status.limit_usd:
                    return Reservation(None, 0.0, current["day"], current["month"], refused=status)
            reservation_id = str(uuid.uuid4())
            self._db.run("INSERT INTO budget_reservations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [reservation_id, spender.key_id or "", spender.user_id, spender.organization_id, amount,
                          current["day"], current["month"], at])
            self._add(spender, current, 0.0, amount)
        return Reservation(reservation_id, amount, current["day"], current["month"])

    def settle(self, spender: Spender, reservation: Reservation, cost_usd: float) -> None:
        """The call ended: release its reservation (if still held) and count its real cost in its windows."""
        held = {"day": reservation.day, "month": reservation.month}
        with self._db.transaction():
            self._db.serialize(_lock(spender.organization_id))
            released = 0.0
            if reservation.reservation_id is not None:
                rows = self._db.rows("SELECT amount_usd FROM budget_reservations WHERE reservation_id = ?",
                                     [reservation.reservation_id])
                if rows:  # else released already as stale: its amount left the counters then
                    released = rows[0][0]
                    self._db.run("DELETE FROM budget_reservations WHERE reservation_id = ?",
                                 [reservation.reservation_id])
            if released or cost_usd:
                self._add(spender, held, max(0.0, float(cost_usd)), -released)

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
                found = self._db.rows("SELECT spent_usd, reserved_usd FROM spend WHERE scope = ? AND subject_id = ?"
                                      " AND period = ? AND window_start = ?", [scope, subject, period, current[period]])
                spent, reserved = found[0] if found else (0.0, 0.0)
                out.append(BudgetStatus(scope, subject, period, limit, spent, max(0.0, reserved),
                                        max(0.0, limit - spent - max(0.0, reserved)), resets_at(period, at)))
        return out

    def _add(self, spender: Spender, window: dict[str, str], spent: float, reserved: float) -> None:
        for scope, subject in _subjects(spender):
            for period in PERIODS:
                self._db.run(
                    "INSERT INTO spend VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, subject_id, period, window_start)"
                    " DO UPDATE SET spent_usd = spend.spent_usd + excluded.spent_usd,"
                    " reserved_usd = spend.reserved_usd + excluded.reserved_usd",
                    [scope, subject, period, window[period], spent, reserved])

    def _release_stale(self, organization_id: str, at: datetime) -> None:
        stale = self._db.rows("SELECT reservation_id, key_id, user_id, amount_usd, day, month FROM budget_reservations"
                              " WHERE organization_id = ? AND created_at < ?",
                              [organization_id, at - STALE_RESERVATION])
        for reservation_id, key_id, user_id, amount, day, month in stale:
            self._db.run("DELETE FROM budget_reservations WHERE reservation_id = ?", [reservation_id])
            self._add(Spender(key_id or None, user_id, organization_id), {"day": day, "month": month}, 0.0, -amount)
