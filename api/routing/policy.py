"""The decision rule: predicted quality + price + latency + the caller's trade-off -> one model.

Utility of candidate m:  u_m = q_m - lambda * x_m
- q_m: predicted quality (0..1) from the router;
- x_m: the candidate's normalised log cost, log(cost_m / cheapest) / log(dearest / cheapest), in [0, 1]. Normalising
  by the candidate set makes the trade-off mean the same thing whatever the price spread: 0 = the cheapest option,
  1 = the dearest one. (For `tradeoff="latency"` the same is done with latency.)
- lambda: how many points of quality the caller gives up to go from the dearest to the cheapest candidate.

`cost_quality_tradeoff` t in 0..10 picks lambda from a schedule calibrated on data (stored in the default router's
artefact): lambda(0) = 0 (pure quality: the best predicted quality, cheaper on ties), lambda(10) = infinity (the
cheapest, best quality on ties), and lambda(t) for 1..9 is the t/10 quantile of the predicted quality gap between
GPT-4 and Mixtral on the training prompts. So on typical traffic t sends about (10 - t) / 10 of the calls to the
stronger of two models, and the 11 settings trace the quality/cost curve in even steps of strong-call share.

The choice is monotone: for fixed scores a higher t never picks a dearer model (argmax of q - lambda x with
lambda rising can only move to smaller x; ties break towards the cheaper model). The default is pure quality.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Used when no calibrated schedule is supplied (e.g. a custom router): an even spread over the 0..1 quality scale.
DEFAULT_SCHEDULE = tuple(float(x) for x in np.round(np.linspace(0.0, 0.3, 11), 4)[:10]) + (float("inf"),)
# Tokens we expect the model to write when the caller says nothing: prices are per token, answers are not free.
DEFAULT_OUTPUT_TOKENS = 350
# `tradeoff="cost"` / `"latency"` use the schedule's middle setting (about half the calls move to the cheaper model).
NAMED_TRADEOFF_SETTING = 5


class PolicyError(ValueError):
    """A trade-off request the policy cannot honour (the web layer maps it to 400)."""


@dataclass(frozen=True)
class Decision:
    index: int  # chosen candidate
    quality: np.ndarray  # predicted quality per candidate
    cost_usd: np.ndarray  # estimated cost per candidate for this request
    utility: np.ndarray  # what was maximised
    ranking: np.ndarray  # candidate indices, best first
    lam: float  # the lambda used
    position: np.ndarray  # the 0..1 cost (or latency) position lambda weighs: replaying a decision needs it


def request_cost_usd(
    input_price: np.ndarray, output_price: np.ndarray, prompt_tokens: int, output_tokens: int = DEFAULT_OUTPUT_TOKENS
) -> np.ndarray:
    """Estimated USD of one call: prompt tokens at the input price plus the expected answer at the output price."""
    return (prompt_tokens * np.asarray(input_price, float) + output_tokens * np.asarray(output_price, float)) / 1e6


def normalised_log(values: np.ndarray) -> np.ndarray:
    """Map positive costs (or latencies) to [0, 1] on a log scale within the candidate set; all-equal -> zeros."""
    v = np.log(np.maximum(np.asarray(values, float), 1e-12))
    lo, hi = float(v.min()), float(v.max())
    if hi - lo < 1e-12:
        return np.zeros_like(v)
    return (v - lo) / (hi - lo)


def lambda_for(cost_quality_tradeoff: int | None, schedule: Sequence[float] = DEFAULT_SCHEDULE) -> float:
    if cost_quality_tradeoff is None:
        return 0.0
    t = int(cost_quality_tradeoff)
    if not 0 <= t <= 10:
        raise PolicyError("cost_quality_tradeoff must be an integer from 0 to 10")
    if len(schedule) != 11:
        raise PolicyError("a trade-off schedule has 11 entries")
    return float(schedule[t])


def choose(
    quality: np.ndarray,
    cost_usd: np.ndarray,
    *,
    latency_s: np.ndarray | None = None,
    cost_quality_tradeoff: int | None = None,
    tradeoff: str | None = None,
    schedule: Sequence[float] = DEFAULT_SCHEDULE,
) -> Decision:
    """Pick one candidate. `tradeoff` ("cost" | "latency") and `cost_quality_tradeoff` are mutually exclusive."""
    q = np.asarray(quality, dtype=float)
    cost = np.asarray(cost_usd, dtype=float)
    if q.ndim != 1 or len(q) == 0 or cost.shape != q.shape:
        raise PolicyError("quality and cost must be non-empty and aligned")
    if tradeoff is not None and cost_quality_tradeoff is not None:
        raise PolicyError("tradeoff and cost_quality_tradeoff are mutually exclusive")

    penalised = cost
    if tradeoff is None:
        lam = lambda_for(cost_quality_tradeoff, schedule)
    elif tradeoff == "cost":
        lam = float(schedule[NAMED_TRADEOFF_SETTING])
    elif tradeoff == "latency":
        lam = float(schedule[NAMED_TRADEOFF_SETTING])
        if latency_s is None:
            raise PolicyError("latency trade-off needs a latency estimate per candidate")
        penalised = np.asarray(latency_s, dtype=float)
    else:
        raise PolicyError(f"unknown tradeoff {tradeoff!r}; expected 'cost' or 'latency'")

    x = normalised_log(penalised)
    if np.isinf(lam):
        # Pure cost: the cheapest (lowest x), best quality among equals.
        utility = -x + 1e-9 * q
        order = np.lexsort((-q, x))
    else:
        utility = q - lam * x
        # Best utility first; ties go to the cheaper, then to the better quality, then to the earlier candidate.
        order = np.lexsort((np.arange(len(q)), -q, x, -np.round(utility, 12)))
    return Decision(index=int(order[0]), quality=q, cost_usd=cost, utility=utility, ranking=order, lam=lam,
                    position=x)
