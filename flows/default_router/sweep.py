"""Held-out evaluation of a router between GPT-4 and Mixtral, the way the quality benchmark measures it.

`tradeoff_sweep` runs the real policy (api.routing.policy.choose) for cost_quality_tradeoff = 0..10 on every item,
using the catalogue prices of the two models, and turns the 11 operating points into a RouteLLM curve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from api.routing import policy
from flows.evaluation import (
    Curve,
    RoutingMetrics,
    curve_from_choices,
    oracle_curve,
    random_curve,
    summarize,
    threshold_curve,
)

# Catalogue prices (USD per million tokens, input/output) of the routed pair; only their order matters to the
# policy (costs are normalised within the candidate set), but they are the real ones for dollar figures.
STRONG_PRICE = (10.0, 30.0)  # openai/gpt-4-1106-preview
WEAK_PRICE = (0.6, 0.6)  # togetherai/mistralai/Mixtral-8x7B-Instruct-v0.1


@dataclass(frozen=True)
class BenchmarkResult:
    name: str
    items: int
    weak_score: float
    strong_score: float
    router: RoutingMetrics  # 11-point cost_quality_tradeoff sweep through the policy
    router_quantile: RoutingMetrics  # RouteLLM's 10-quantile threshold sweep of the same scores
    random: RoutingMetrics
    oracle: RoutingMetrics
    shares: list[float]  # strong-call share at t = 0..10

    def as_dict(self) -> dict:
        return {
            "items": self.items,
            "weak_score": round(self.weak_score, 4),
            "strong_score": round(self.strong_score, 4),
            "router": {k: round(v, 4) for k, v in self.router.as_dict().items()},
            "router_quantile": {k: round(v, 4) for k, v in self.router_quantile.as_dict().items()},
            "random": {k: round(v, 4) for k, v in self.random.as_dict().items()},
            "oracle": {k: round(v, 4) for k, v in self.oracle.as_dict().items()},
            "strong_share_by_tradeoff": [round(s, 3) for s in self.shares],
        }


def tradeoff_choices(quality: np.ndarray, schedule, prompt_tokens: np.ndarray | None = None) -> np.ndarray:
    """(11, n) bool: does setting t send item i to the strong model? quality is (n, 2) = [strong, weak]."""
    n = len(quality)
    tokens = np.full(n, 500) if prompt_tokens is None else prompt_tokens
    choose = np.zeros((11, n), dtype=bool)
    price_in = np.array([STRONG_PRICE[0], WEAK_PRICE[0]])
    price_out = np.array([STRONG_PRICE[1], WEAK_PRICE[1]])
    for i in range(n):
        cost = policy.request_cost_usd(price_in, price_out, int(tokens[i]))
        for t in range(11):
            choose[t, i] = policy.choose(quality[i], cost, cost_quality_tradeoff=t, schedule=schedule).index == 0
    return choose


def evaluate_pair(
    name: str, quality: np.ndarray, strong_item: np.ndarray, weak_item: np.ndarray, schedule
) -> BenchmarkResult:
    strong_item = np.asarray(strong_item, float)
    weak_item = np.asarray(weak_item, float)
    weak, strong = float(weak_item.mean()), float(strong_item.mean())
    choose = tradeoff_choices(quality, schedule)
    curve: Curve = curve_from_choices(choose, strong_item, weak_item)
    gap = quality[:, 0] - quality[:, 1]
    return BenchmarkResult(
        name=name,
        items=len(strong_item),
        weak_score=weak,
        strong_score=strong,
        router=summarize(curve, weak, strong),
        router_quantile=summarize(threshold_curve(gap, strong_item, weak_item), weak, strong),
        random=summarize(random_curve(strong_item, weak_item), weak, strong),
        oracle=summarize(oracle_curve(strong_item, weak_item), weak, strong),
        shares=[float(s) for s in choose.mean(axis=1)],
    )
