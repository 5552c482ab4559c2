"""Every LLM call of a run becomes a usage record (tokens, catalogue prices, task type); a ledger sums them.

Tokens are counted per LM call, from the provider's own `usage` in each response (DSPy's history hook), not with
`dspy.track_usage()`, which loses calls made in worker threads. DSPy's cache is off for these LMs (a cache hit
carries no usage, so costs would be under-reported).
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from storage.event_schemas import USAGE_SCHEMA

TASK_TYPES = ("pre-optimization evaluation", "optimization", "post-optimization evaluation",
              "judge_traffic", "shadow_call",  # judge sampling's spend (flows/learning/judge.py)
              "onboarding")  # measuring a model without figures (flows/model_figures/onboard.py)

class CostCeilingExceeded(RuntimeError):
    pass


@dataclass
class Ledger:
    """The run's usage so far, shared by the threads of one flow run."""

    run_id: str
    user_id: str
    organization_id: str
    ceiling_usd: float
    records: list[dict[str, Any]] = field(default_factory=list)
    total: float = 0.0
    exceeded: bool = False
    key_id: str | None = None  # the API key the spend is billed to (None: not known, e.g. judge sampling)
    # api.budgets.BudgetGate: each call reserves its worst case against the key's, user's and organization's budgets
    # first (docs/operations.md, "Budgets"); None: no budgets (flow tests without a store).
    budget: Any = None
    refusal: str | None = None  # the budget refusal that stopped the run
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self) -> None:
        """Before a call: refuse once the ceiling is reached, so the run stops spending."""
        if self.exceeded or self.total >= self.ceiling_usd:
            self.exceeded = True
            raise CostCeilingExceeded(self.reason())

    def reserve(self, worst_usd: float) -> Any:
        """The budget check before one LM call (api/budgets.py): its hold, or CostCeilingExceeded naming the budget."""
        if self.budget is None:
            return None
        # lazy: the API's budget module (and its error types) load only in runs that have a store
        from api.budgets import BudgetExceeded
        from storage.budget_records import Spender

        try:
            return self.budget.reserve(Spender(self.key_id, self.user_id, self.organization_id), worst_usd)
        except BudgetExceeded as refused:
            with self._lock:
                self.refusal, self.exceeded = refused.message, True
            raise CostCeilingExceeded(refused.message) from None

    def settle(self, hold: Any, cost_usd: float) -> None:
        if hold is not None:
            self.budget.settle_now(hold, cost_usd)

    def reason(self) -> str:
        if self.refusal is not None:
            return self.refusal
        return (f"the run's LLM cost reached the per-run ceiling of ${self.ceiling_usd:.4f} "
                f"(spent ${self.total:.6f}); raise SWITCHBOARD_OPTIMIZE_MAX_COST_USD or send fewer goldens/models")

    def add(self, *, provider: str, model: str, prices: tuple[float, float], usage: dict[str, Any],
            task_type: str, position: int, role: str, latency_s: float) -> dict[str, Any]:
        assert task_type in TASK_TYPES, task_type
        tin = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        tout = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        cin, cout = tin * prices[0] / 1e6, tout * prices[1] / 1e6
        row = {"id": str(uuid.uuid4()), "user_id": self.user_id, "organization_id": self.organization_id,
               "adaptation_run_id": self.run_id, "provider": provider, "model": model, "input_tokens": tin,
               "output_tokens": tout, "input_cost": cin, "output_cost": cout, "total_cost": cin + cout,
               "timestamp": time.time(), "task_type": task_type, "position": position, "role": role,
               "latency_s": latency_s, "key_id": self.key_id}
        with self._lock:
            self.records.append(row)
            self.total += cin + cout
            if self.total > self.ceiling_usd:
                self.exceeded = True
        return row

    def for_position(self, position: int) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.records if r["position"] == position]

    def table(self, rows: list[dict[str, Any]]) -> pa.Table:
        return pa.Table.from_pylist(rows, schema=USAGE_SCHEMA)
