"""Budgets on the spend path: the one check every paid LLM call passes before it reaches a provider (the gateway,
prompt optimization, judge sampling), and its settlement with the real cost after.

`BudgetGate.reserve` asks the store to reserve the call's worst-case cost against every budget of the key, its user
and their organization (storage/repositories/budgets.py takes one lock per organization, so concurrent calls on
any number of workers are checked one after another); a refusal raises BudgetExceeded (429 BUDGET_EXCEEDED) and no
provider is called. `settle` runs off the caller's path, in one background thread."""

from __future__ import annotations

import logging
import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from api.errors import ApiError, ServiceUnavailable
from api.routing.text import MessageShapeError, count_tokens, message_texts
from storage.budget_records import BudgetStatus, Reservation, Spender
from storage.interfaces import Budgets
from storage.records import User

log = logging.getLogger("switchboard.api")
# Tokens counted with the routing's encoding (tiktoken's cl100k) under-count some providers' tokenizers; the
# reservation allows for it, and for the few tokens each message's framing adds.
PROMPT_TOKEN_MARGIN, TOKENS_PER_MESSAGE = 1.25, 8


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


@dataclass
class BudgetGate:
    budgets: Budgets
    default_output_tokens: int = 4096
    _settler: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="budget-settle"))
    _pending: set = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def reserve(self, spender: Spender, worst_usd: float) -> Hold:
        """THE budget check (blocking: a store call): reserve `worst_usd` or raise BudgetExceeded."""
        try:
            reservation = self.budgets.reserve(spender, worst_usd)
        except Exception as exc:  # fail closed: without the store no one can say the budget allows it
            log.warning("budget check failed (%s); the call is refused", type(exc).__name__)
            raise ServiceUnavailable("the budget store is not reachable; retry in a few seconds",
                                     code="STORE_UNAVAILABLE", headers={"Retry-After": "2"}) from None
        refused = reservation.refused
        if refused is not None:
            wait = max(1, math.ceil((refused.resets_at - datetime.now(timezone.utc)).total_seconds()))
            raise BudgetExceeded(refusal_message(refused, worst_usd), headers={"Retry-After": str(wait)}, details={
                "budget": {"scope": refused.scope, "subject_id": refused.subject_id, "period": refused.period},
                "limit_usd": refused.limit_usd, "spent_usd": refused.spent_usd,
                "reserved_usd": refused.reserved_usd, "requested_usd": worst_usd,
                "resets_at": refused.resets_at.isoformat()})
        return Hold(spender, reservation)

    def settle(self, hold: Hold | None, cost_usd: float | None) -> None:
        """Count the real cost and release the reservation, in the background (never on the event loop)."""
        if hold is None:
            return
        future = self._settler.submit(self.settle_now, hold, float(cost_usd or 0.0))
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future) -> None:
        with self._lock:
            self._pending.discard(future)

    def settle_now(self, hold: Hold, cost: float) -> None:
        """Settle in this thread (a flow run's LM call, already off any event loop)."""
        try:
            self.budgets.settle(hold.spender, hold.reservation, cost)
        except Exception as exc:  # the reservation is released as stale later; the spend is in the usage logs
            log.warning("could not settle a budget reservation (%s)", type(exc).__name__)

    def drain(self) -> None:
        """Wait for the settlements under way (tests; shutdown)."""
        with self._lock:
            pending = list(self._pending)
        for future in pending:
            future.result()

    def close(self) -> None:
        self._settler.shutdown(wait=True)
