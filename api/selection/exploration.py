"""Opt-in exploration (a preference's `exploration_rate`, 0..0.1, bounded in api/schemas/preferences.py): now and
then route to a near-best alternative instead of the top one, so feedback reaches models the router under-rates,
and say with what probability.

Only candidates already ranked by the policy are drawn from, so exploration never leaves the caller's list nor
picks a model whose context window cannot hold the prompt (those never reach the ranking: eligibility.py). "Near"
is measured in the policy's utility, quality less the priced trade-off, so exploring stays within the caller's
cost/quality setting. The logged propensity is what off-policy evaluation divides by (flows/learning/off_policy.py).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

# An alternative is near-best when its utility is within this of the top one: ten points of predicted accuracy at
# cost_quality_tradeoff 0. Wider would spend the caller's quality on models the router is sure are worse.
NEAR_MARGIN = 0.1


def explore(utility_ranked: Sequence[float], rate: float, rng: random.Random,
            margin: float = NEAR_MARGIN) -> tuple[int, float]:
    """(position in the ranking to route to, its propensity). With rate 0, or no near-best alternative, the top one
    with propensity 1.0; otherwise the top with 1 - rate, and each near alternative with rate / their number."""
    if rate <= 0 or len(utility_ranked) < 2:
        return 0, 1.0
    top = utility_ranked[0]
    near = [i for i in range(1, len(utility_ranked)) if top - utility_ranked[i] <= margin]
    if not near:
        return 0, 1.0
    if rng.random() < rate:
        return near[rng.randrange(len(near))], rate / len(near)
    return 0, 1.0 - rate
