"""Budgets in the store, on DuckDB and on PostgreSQL (issue 34): a reservation of the worst case before a call and
its settlement after; refusals name the budget; concurrent reservations from several connections (processes'
worth, on PostgreSQL) never pass a budget by more than one reservation; bad input stores nothing and loses
nothing; rotation, rate limits and the audit."""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from api.budgets import BudgetExceeded, BudgetGate, Hold
from storage.budget_records import Reservation, Spender, resets_at, windows
from storage.errors import StoreError
from storage.keys import hash_key
from storage.repositories.budgets import STALE_RESERVATION
from storage.sql import now
from storage.store import SqlStore
from tests.storage.conftest import open_engine

LIMIT, WORST = 1.00, 0.05


def spender(store: SqlStore, user: str = "alice", org: str = "acme") -> tuple[Spender, str]:
    issued = store.accounts.issue_key(user, organization_id=org)
    return Spender(issued.info.key_id, user, org), issued.key


def test_a_call_within_the_budget_is_reserved_then_settled_at_its_real_cost(store: SqlStore) -> None:
    who, _ = spender(store)
    store.budgets.set_budget("admin", "acme", "key", who.key_id, "day", LIMIT)
    held = store.budgets.reserve(who, 0.4)
    assert held.reservation_id is not None and held.refused is None
    [status] = store.budgets.status(who)
    assert (status.spent_usd, status.reserved_usd) == (0.0, pytest.approx(0.4))
    store.budgets.settle(who, held, 0.1)
    [status] = store.budgets.status(who)
    assert status.spent_usd == pytest.approx(0.1) and status.reserved_usd == pytest.approx(0.0)
    assert status.remaining_usd == pytest.approx(0.9)
    assert status.resets_at == resets_at("day", now())


def test_a_refusal_names_the_budget_its_limit_and_spend_and_reserves_nothing(store: SqlStore) -> None:
    who, _ = spender(store)
    store.budgets.set_budget("admin", "acme", "organization", "acme", "month", 0.5)
    store.budgets.settle(who, store.budgets.reserve(who, 0.45), 0.45)
    refused = store.budgets.reserve(who, 0.1)
    assert refused.reservation_id is None and refused.refused is not None
    assert (refused.refused.scope, refused.refused.subject_id, refused.refused.period) == ("organization", "acme",
                                                                                          "month")
    assert refused.refused.limit_usd == 0.5 and refused.refused.spent_usd == pytest.approx(0.45)
    assert store.budgets.status(who)[0].reserved_usd == pytest.approx(0.0)


def test_user_and_organization_budgets_cover_every_key_of_theirs(store: SqlStore) -> None:
    first, _ = spender(store)
    second, _ = spender(store)  # another key of alice
    store.budgets.set_budget("admin", "acme", "user", "alice", "day", 0.3)
    store.budgets.settle(first, store.budgets.reserve(first, 0.2), 0.2)
    refused = store.budgets.reserve(second, 0.2)
    assert refused.refused is not None and refused.refused.scope == "user"
    other, _ = spender(store, "bob")  # same organization, own user: alice's budget is not bob's
    assert store.budgets.reserve(other, 0.2).refused is None


def test_spend_is_counted_without_any_budget_so_a_later_budget_sees_it(store: SqlStore) -> None:
    who, _ = spender(store)
    unbudgeted = store.budgets.reserve(who, 0.3)
    assert unbudgeted.reservation_id is None and unbudgeted.refused is None
    store.budgets.settle(who, unbudgeted, 0.3)
    store.budgets.set_budget("admin", "acme", "key", who.key_id, "month", 0.5)
    assert store.budgets.reserve(who, 0.3).refused is not None
    assert store.accounts.key(who.key_id).spent_month_usd == pytest.approx(0.3)


def test_a_reservation_left_by_a_dead_process_is_released(store: SqlStore) -> None:
    who, _ = spender(store)
    store.budgets.set_budget("admin", "acme", "key", who.key_id, "day", LIMIT)
    held = store.budgets.reserve(who, 0.9)
    store.budgets._db.run("UPDATE budget_reservations SET created_at = ?",
                          [now() - STALE_RESERVATION - timedelta(minutes=1)])
    assert store.budgets.reserve(who, 0.9).refused is None  # the stale 0.9 went back
    store.budgets.settle(who, held, 0.0)  # its late settlement releases nothing twice
    assert store.budgets.status(who)[0].reserved_usd == pytest.approx(0.9)


@pytest.mark.parametrize("limit", [-1.0, float("nan")])
def test_a_bad_limit_is_refused_and_the_budget_already_set_stays(store: SqlStore, limit: float) -> None:
    who, _ = spender(store)
    store.budgets.set_budget("admin", "acme", "key", who.key_id, "day", LIMIT)
    with pytest.raises(StoreError):
        store.budgets.set_budget("admin", "acme", "key", who.key_id, "day", limit)
    assert [b.limit_usd for b in store.budgets.budgets("acme")] == [LIMIT]


@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_eight_concurrent_spenders_never_pass_the_budget_by_more_than_one_reservation(
        engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Eight threads, each on its own store (on PostgreSQL its own connection pool: what eight API workers are),
    reserve a call's worst case and settle a real cost up to it, until refused."""
    first = open_engine(engine, tmp_path / "store.duckdb", request)
    who, _ = spender(first)
    first.budgets.set_budget("admin", "acme", "key", who.key_id, "day", LIMIT)
    stores = [first] + ([open_engine(engine, tmp_path / "store.duckdb", request) for _ in range(7)]
                        if engine == "postgres" else [first] * 7)
    settled: list[float] = []
    lock = threading.Lock()

    def client(store: SqlStore, seed: int) -> None:
        rng = random.Random(seed)
        while True:
            held: Reservation = store.budgets.reserve(who, WORST)
            if held.refused is not None:
                return
            cost = WORST * rng.uniform(0.5, 1.0)
            store.budgets.settle(who, held, cost)
            with lock:
                settled.append(cost)

    threads = [threading.Thread(target=client, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    try:
        [status] = first.budgets.status(who)
        assert sum(settled) <= LIMIT + WORST
        assert sum(settled) > LIMIT - 2 * WORST  # the budget was really spent, not refused early
        assert status.spent_usd == pytest.approx(sum(settled)) and status.reserved_usd == pytest.approx(0.0)
    finally:
        for s in dict.fromkeys(stores):
            s.close()


def test_a_rotated_key_works_for_its_grace_period_then_stops(store: SqlStore) -> None:
    issued = store.accounts.issue_key("alice", organization_id="acme")
    new = store.accounts.rotate_key(issued.info.key_id, 3600, actor="admin")
    assert store.accounts.user_for_key(hash_key(issued.key)) is not None  # within the grace period
    assert store.accounts.user_for_key(hash_key(new.key)).key_id == new.info.key_id
    again = store.accounts.rotate_key(new.info.key_id, 0, actor="admin")
    assert store.accounts.user_for_key(hash_key(new.key)) is None  # no grace: gone at once
    assert store.accounts.user_for_key(hash_key(again.key)) is not None
    actions = [entry.action for entry in store.accounts.audit("acme")]
    assert actions.count("key.rotate") == 2 and actions.count("key.create") == 1
    assert {entry.actor for entry in store.accounts.audit("acme") if entry.action == "key.rotate"} == {"admin"}


def test_a_key_lists_its_last_use_rate_limit_and_spend(store: SqlStore) -> None:
    who, key = spender(store)
    assert store.accounts.key(who.key_id).last_used_at is None
    store.accounts.user_for_key(hash_key(key))
    store.budgets.settle(who, store.budgets.reserve(who, 0.2), 0.125)
    store.accounts.set_rate_limit(who.key_id, 30, actor="admin")
    [details] = store.accounts.key_details("acme")
    assert details.last_used_at is not None and details.rate_limit_per_minute == 30
    assert details.spent_today_usd == pytest.approx(0.125)
    assert store.accounts.user_for_key(hash_key(key)).rate_limit_per_minute == 30
    assert store.accounts.key_details("other-org") == []


def test_an_unbudgeted_caller_passes_without_the_store_until_the_recheck_and_its_spend_still_counts(
        store: SqlStore) -> None:
    """The API's gate (api/budgets.py free_pass): a caller the store found without any budget passes without a store
    call for recheck_unbudgeted_s; a budget set meanwhile applies once that has passed, and the spend settled by the
    calls in between is counted against it."""
    who, _ = spender(store)
    gate = BudgetGate(store.budgets, recheck_unbudgeted_s=0.2)
    assert gate.free_pass(who) is None  # never checked: ask the store
    first = gate.reserve(who, 0.4)
    assert first.reservation.reservation_id is None  # no budget: nothing reserved
    store.budgets.set_budget("admin", "acme", "key", who.key_id, "day", 0.5)
    passed = gate.free_pass(who)
    assert passed is not None and passed.reservation.reservation_id is None
    today = windows(now())  # the gate formats the windows once a day: they are still today's
    assert (passed.reservation.day, passed.reservation.month) == (today["day"], today["month"])
    gate.settle_now(passed, 0.3)
    time.sleep(0.25)
    assert gate.free_pass(who) is None  # the window is over: the store is asked again
    with pytest.raises(BudgetExceeded):
        gate.reserve(who, 0.4)  # 0.3 spent in the window + 0.4 > 0.5
    assert gate.free_pass(who) is None  # a caller with a budget always asks the store
    assert BudgetGate(store.budgets).free_pass(who) is None  # flows' gates check every call


def test_settlements_ending_together_are_written_in_one_transaction_and_drain_does_not_wait_to_gather(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The API's gate gathers what ends within SPEND_EVERY_S into one settle_many (one commit, not one per call:
    issue 36); drain() (shutdown, tests) writes what is queued at once instead of waiting out the gathering."""
    import api.budgets

    monkeypatch.setattr(api.budgets, "SPEND_EVERY_S", 600.0)  # far longer than the test: only drain() ends it
    recorded = RecordedSettlements()
    gate = BudgetGate(recorded)  # type: ignore[arg-type]
    who = Spender("k1", "alice", "acme")
    for _ in range(50):
        gate.settle(Hold(who, Reservation(None, 0.0, "2026-11-27", "2026-11")), 0.001)
    assert recorded.batches == []  # gathering
    drained = threading.Thread(target=gate.drain, daemon=True)
    drained.start()
    drained.join(timeout=60)
    assert not drained.is_alive(), "drain() waited for the gathering interval"
    assert recorded.batches == [50]
    gate.settle(None, 1.0)  # a call that reserved nothing settles nothing
    gate.drain()
    assert recorded.batches == [50]


def test_a_reservation_is_released_without_waiting_for_the_spend_to_gather(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spend alone may wait SPEND_EVERY_S; a queued reservation makes the writer commit within RELEASE_WITHIN_S,
    taking the spend gathered so far with it."""
    import api.budgets

    monkeypatch.setattr(api.budgets, "SPEND_EVERY_S", 600.0)
    recorded = RecordedSettlements()
    gate = BudgetGate(recorded)  # type: ignore[arg-type]
    who = Spender("k1", "alice", "acme")
    for _ in range(5):
        gate.settle(Hold(who, Reservation(None, 0.0, "2026-11-27", "2026-11")), 0.001)
    gate.settle(Hold(who, Reservation("r1", 0.05, "2026-11-27", "2026-11")), 0.001)
    deadline = time.monotonic() + 60  # RELEASE_WITHIN_S is 0.1 s; a loaded machine may take longer to schedule
    while not recorded.batches and time.monotonic() < deadline:
        time.sleep(0.02)
    assert recorded.batches == [6]


class RecordedSettlements:
    """A Budgets stand-in that records the size of each settle_many batch."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def settle_many(self, batch: list) -> None:
        self.batches.append(len(batch))
