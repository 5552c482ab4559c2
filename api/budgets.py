"""Budgets on the spend path: the one check every paid LLM call passes before it reaches a provider (the gateway,
prompt optimization, judge sampling), and its settlement with the real cost after.

`BudgetGate.reserve` asks the store to reserve the call's worst-case cost against every budget of the key, its user
and their organization (storage/repositories/budgets.py takes one lock per organization, so concurrent calls on
any number of workers are checked one after another); a refusal raises BudgetExceeded (429 BUDGET_EXCEEDED) and no
provider is called. `settle` runs off the caller's path, in one background thread, in batches of what ended within
SPEND_EVERY_S (a reservation's release within RELEASE_WITHIN_S)."""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from api.errors import ApiError, ServiceUnavailable
from api.routing.text import MessageShapeError, count_tokens, message_texts
from storage.budget_records import BudgetStatus, Reservation, Settlement, Spender, windows
from storage.interfaces import Budgets
from storage.records import User

log = logging.getLogger("switchboard.api")
# Tokens counted with the routing's encoding (tiktoken's cl100k) under-count some providers' tokenizers; the
# reservation allows for it, and for the few tokens each message's framing adds.
PROMPT_TOKEN_MARGIN, TOKENS_PER_MESSAGE = 1.25, 8
UNBUDGETED_RECHECK_S = 1.0  # the API's BudgetGate.recheck_unbudgeted_s (docs/operations.md, "Budgets")
MIN_CALL_USD = 1e-6  # what work about to start must at least have left (prompt optimization's start)
# The settlement writer gathers what ends within a while into one transaction. Committed as each call ended, a busy
# worker spent more CPU settling than answering (0.75 ms a proxied call: a DuckDB commit of the spend upserts costs
# 15-20 ms of CPU at load 17 whatever the batch's size; docs/benchmarks.md, issue 36). Spend alone (a caller with no
# budget reserves nothing) waits up to SPEND_EVERY_S; a reservation is released within RELEASE_WITHIN_S, so a
# caller at its limit is refused at most that much earlier than if it were released at once (never later).
SPEND_EVERY_S, RELEASE_WITHIN_S = 1.0, 0.1


class BudgetExceeded(ApiError):
    status, code, type = 429, "BUDGET_EXCEEDED", "insufficient_quota"


def spender_of(user: User) -> Spender:
    return Spender(user.key_id, user.user_id, user.organization_id)


def prompt_tokens_of(messages: Any, tools: Any = None) -> int:
    """An upper estimate of a chat request's prompt tokens, for its reservation."""
    try:
        turns = message_texts(messages)
    except MessageShapeError:
        turns = [("user", str(messages))]
    counted = sum(count_tokens(text) + TOKENS_PER_MESSAGE for _, text in turns)
    if tools:
        counted += len(str(tools)) // 3
    return math.ceil(counted * PROMPT_TOKEN_MARGIN)


def worst_case_usd(input_price: float, output_price: float, prompt_tokens: int, max_tokens: int | None,
                   context_length: int | None, default_output_tokens: int) -> float:
    """USD for the prompt plus the most output the call may produce: `max_tokens` when the request sets it, else
    the default, never more than what the model's window leaves (prices: USD per million tokens)."""
    output = max_tokens if max_tokens and max_tokens > 0 else default_output_tokens
    if context_length:
        output = max(0, min(output, context_length - prompt_tokens)) or output
    return (prompt_tokens * input_price + output * output_price) / 1e6


def refusal_message(status: BudgetStatus, requested: float) -> str:
    period = {"day": "daily", "month": "monthly"}.get(status.period, status.period)
    return (f"budget exceeded: the {period} budget of {status.scope} {status.subject_id} is "
            f"${status.limit_usd:.4f}, ${status.spent_usd:.4f} is spent and ${status.reserved_usd:.4f} is reserved by "
            f"calls under way; this call may cost up to ${requested:.4f}; it resets at "
            f"{status.resets_at.isoformat().replace('+00:00', 'Z')}")


@dataclass(frozen=True)
class Hold:
    spender: Spender
    reservation: Reservation


class BudgetGate:
    """The check (`reserve`, in the caller's path) and the settlements (`settle`: queued, and written by one
    background thread in batches, one transaction each, so a busy worker commits a few times a second, not per call)."""

    MAX_BATCH = 500

    def __init__(self, budgets: Budgets, default_output_tokens: int = 4096, recheck_unbudgeted_s: float = 0.0) -> None:
        self.budgets, self.default_output_tokens = budgets, default_output_tokens
        # A spender the store found without any budget a moment ago passes without a store call (free_pass) for this
        # long: the API sets UNBUDGETED_RECHECK_S, so a gateway call of an unbudgeted key costs no lock, no store
        # round trip and no thread hop; a budget set meanwhile applies on every worker within that time (its spend
        # is settled and counted all the same). Flows check every call (0).
        self.recheck_unbudgeted_s = recheck_unbudgeted_s
        self._unbudgeted: dict[Spender, float] = {}  # spender -> when the store last found no budget for it
        self._day: tuple[int, dict[str, str]] = (-1, {})  # the UTC day number and its windows
        self._queue: list[Settlement] = []
        self._writing = False
        self._hurry = 0  # drain() callers waiting: write what is queued without gathering more
        self._release_by = math.inf  # when the writer must commit: a queued reservation is released by then
        self._ready = threading.Condition()
        self._thread: threading.Thread | None = None

    def reserve(self, spender: Spender, worst_usd: float) -> Hold:
        """THE budget check (blocking: a store call): reserve `worst_usd` or raise BudgetExceeded."""
        try:
            reservation = self.budgets.reserve(spender, worst_usd)
        except Exception as exc:  # fail closed: without the store no one can say the budget allows it
            log.warning("budget check failed (%s); the call is refused", type(exc).__name__)
            raise ServiceUnavailable("the budget store is not reachable; retry in a few seconds",
                                     code="STORE_UNAVAILABLE", headers={"Retry-After": "2"}) from None
        refused = reservation.refused
        if self.recheck_unbudgeted_s > 0 and reservation.reservation_id is None and refused is None:
            self._unbudgeted[spender] = time.monotonic()
        else:
            self._unbudgeted.pop(spender, None)
        if refused is not None:
            wait = max(1, math.ceil((refused.resets_at - datetime.now(timezone.utc)).total_seconds()))
            raise BudgetExceeded(refusal_message(refused, worst_usd), headers={"Retry-After": str(wait)}, details={
                "budget": {"scope": refused.scope, "subject_id": refused.subject_id, "period": refused.period},
                "limit_usd": refused.limit_usd, "spent_usd": refused.spent_usd,
                "reserved_usd": refused.reserved_usd, "requested_usd": worst_usd,
                "resets_at": refused.resets_at.isoformat()})
        return Hold(spender, reservation)

    def free_pass(self, spender: Spender) -> Hold | None:
        """A hold without a store call when the store found no budget for `spender` within recheck_unbudgeted_s;
        None: reserve() must ask the store."""
        seen = self._unbudgeted.get(spender)
        if seen is None or time.monotonic() - seen > self.recheck_unbudgeted_s:
            return None
        current = self._windows()
        return Hold(spender, Reservation(None, 0.0, current["day"], current["month"]))

    def _windows(self) -> dict[str, str]:
        """windows(now), formatted once a UTC day: strftime made free_pass cost 59 us a call at load 21 (now 20)."""
        day = int(time.time() // 86400)  # Unix time's days begin at 00:00 UTC
        if self._day[0] != day:
            self._day = (day, windows(datetime.fromtimestamp(day * 86400, timezone.utc)))
        return self._day[1]

    def settle(self, hold: Hold | None, cost_usd: float | None) -> None:
        """Count the real cost and release the reservation, in the background (never on the event loop)."""
        if hold is None:
            return
        with self._ready:
            self._queue.append(Settlement(hold.spender, hold.reservation, float(cost_usd or 0.0)))
            if self._thread is None:
                self._thread = threading.Thread(target=self._write, name="budget-settle", daemon=True)
                self._thread.start()
            wake = len(self._queue) in (1, self.MAX_BATCH)  # the writer waits for the first, or gathers up to a batch
            if hold.reservation.reservation_id is not None and self._release_by == math.inf:
                self._release_by, wake = time.monotonic() + RELEASE_WITHIN_S, True  # the writer's wait shortens
            if wake:
                self._ready.notify_all()

    def settle_now(self, hold: Hold, cost: float) -> None:
        """Settle in this thread (a flow run's LM call, already off any event loop)."""
        self._store([Settlement(hold.spender, hold.reservation, float(cost))])

    def _write(self) -> None:
        while True:
            with self._ready:
                while not self._queue:
                    self._ready.wait()
                gathered_by = time.monotonic() + SPEND_EVERY_S
                while (not self._hurry and len(self._queue) < self.MAX_BATCH
                       and (left := min(gathered_by, self._release_by) - time.monotonic()) > 0):
                    self._ready.wait(left)
                batch, self._queue = self._queue[: self.MAX_BATCH], self._queue[self.MAX_BATCH:]
                held = any(s.reservation.reservation_id is not None for s in self._queue)
                self._release_by = time.monotonic() if held else math.inf  # what is left over: now, or gather again
                self._writing = True
            try:
                self._store(batch)
            finally:
                with self._ready:
                    self._writing = False
                    self._ready.notify_all()

    def _store(self, batch: list[Settlement]) -> None:
        try:
            self.budgets.settle_many(batch)
        except Exception as exc:  # the reservations stop counting once stale; the spend is in the usage logs
            log.warning("could not settle %d budget reservation(s) (%s)", len(batch), type(exc).__name__)

    def drain(self) -> None:
        """Wait for the settlements queued so far (tests; shutdown)."""
        with self._ready:
            self._hurry += 1
            self._ready.notify_all()
            try:
                while self._queue or self._writing:
                    self._ready.wait()
            finally:
                self._hurry -= 1
