"""The trade-off schedule of a custom router, and its evaluation, both on out-of-fold predictions.

Schedule. The policy (api.routing.policy) maximises q - lambda * x, x being the candidate's normalised log cost.
For a custom router, lambda(t) is chosen so that, over the training prompts and with all trained models as
candidates, the mean spend at setting t is  spend(0) - t/10 * (spend(0) - spend(cheapest)):  t = 0 is pure
quality, t = 10 the cheapest model, and each step saves an even tenth of the money in between. With two models
this is the default router's rule (t sends about (10 - t)/10 of the calls to the dearer model).

Evaluation. For each setting t, the models the router picks and the observed quality and cost of those picks,
beside every single model and the oracle (the best observed model per prompt, cheapest on ties).
"""

from __future__ import annotations

import numpy as np

from api.routing.policy import DEFAULT_OUTPUT_TOKENS

SETTINGS = range(11)


def request_costs(prompt_chars: np.ndarray, input_price: np.ndarray, output_price: np.ndarray) -> np.ndarray:
    """(n, M) estimated USD per request: prompt tokens (chars / 4) at the input price + the default answer."""
    tokens = np.maximum(np.asarray(prompt_chars, float) / 4.0, 1.0)[:, None]
    return (tokens * input_price[None, :] + DEFAULT_OUTPUT_TOKENS * output_price[None, :]) / 1e6


def normalised_log_rows(cost: np.ndarray) -> np.ndarray:
    """Row-wise api.routing.policy.normalised_log."""
    v = np.log(np.maximum(cost, 1e-12))
    lo, hi = v.min(axis=1, keepdims=True), v.max(axis=1, keepdims=True)
    span = hi - lo
    return np.where(span < 1e-12, 0.0, (v - lo) / np.where(span < 1e-12, 1.0, span))


def choices(quality: np.ndarray, cost: np.ndarray, lam: float) -> np.ndarray:
    """Index chosen per row by the policy's rule (best utility; ties to the cheaper, then better quality)."""
    x = normalised_log_rows(cost)
    if np.isinf(lam):
        utility = -x + 1e-9 * quality
    else:
        utility = np.round(quality - lam * x, 12) - 1e-13 * x
    return np.argmax(utility, axis=1)


def mean_spend(quality: np.ndarray, cost: np.ndarray, lam: float) -> float:
    pick = choices(quality, cost, lam)
    return float(cost[np.arange(len(cost)), pick].mean())


def calibrate_schedule(quality: np.ndarray, cost: np.ndarray) -> list[float]:
    """The ten finite lambdas (t = 0..9); t = 10 is infinity (stored implicitly)."""
    top, bottom = mean_spend(quality, cost, 0.0), mean_spend(quality, cost, float("inf"))
    schedule = [0.0]
    hi_limit = 2.0 * float(np.ptp(quality)) + 1.0
    for t in range(1, 10):
        target = top - t / 10 * (top - bottom)
        lo, hi = schedule[-1], hi_limit
        for _ in range(40):  # spend falls as lambda rises: bisect
            mid = (lo + hi) / 2
            if mean_spend(quality, cost, mid) > target:
                lo = mid
            else:
                hi = mid
        schedule.append(round(hi, 6))
    return schedule


def evaluate(predicted: np.ndarray, observed: np.ndarray, cost: np.ndarray, schedule: list[float],
             models: list[str]) -> dict:
    """Router at every setting vs each single model vs the oracle: mean observed quality (0..1 scale), mean USD
    per 1,000 requests, and (for the router) each model's share of the calls."""
    n = len(observed)
    rows = []
    lambdas = list(schedule) + [float("inf")]
    for t in SETTINGS:
        pick = choices(predicted, cost, lambdas[t])
        shares = np.bincount(pick, minlength=len(models)) / n
        rows.append({"name": f"router t={t}", "setting": t, "quality": float(observed[np.arange(n), pick].mean()),
                     "cost_per_1k": float(cost[np.arange(n), pick].mean() * 1000),
                     "shares": {models[m]: round(float(s), 4) for m, s in enumerate(shares) if s > 0}})
    for m, key in enumerate(models):
        rows.append({"name": key, "setting": None, "quality": float(observed[:, m].mean()),
                     "cost_per_1k": float(cost[:, m].mean() * 1000), "shares": {key: 1.0}})
    best = observed.max(axis=1, keepdims=True)
    oracle = np.argmin(np.where(observed >= best - 1e-12, cost, np.inf), axis=1)
    rows.append({"name": "oracle", "setting": None, "quality": float(best.mean()),
                 "cost_per_1k": float(cost[np.arange(n), oracle].mean() * 1000), "shares": {}})
    singles = rows[11:11 + len(models)]
    best_single = max(singles, key=lambda r: r["quality"])
    summary = {"rows": n, "best_single_model": best_single["name"], "best_single_quality": best_single["quality"],
               "router_quality_t0": rows[0]["quality"], "oracle_quality": rows[-1]["quality"]}
    cheaper = [r for r in rows[:11] if r["quality"] >= best_single["quality"] - 0.01]
    if cheaper:
        pick = min(cheaper, key=lambda r: r["cost_per_1k"])
        summary["cheapest_setting_within_1pt_of_best_single"] = pick["setting"]
        summary["its_cost_share_of_best_single"] = pick["cost_per_1k"] / max(best_single["cost_per_1k"], 1e-12)
    return {"summary": summary, "table": rows}
