"""The decision rule: pure quality at 0, cheapest at 10, monotone in between, named trade-offs, errors."""

import numpy as np
import pytest

from api.routing import policy
from api.routing.policy import PolicyError, choose, normalised_log, request_cost_usd

SCHEDULE = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, float("inf"))


def test_zero_is_pure_quality_and_ten_is_cheapest():
    q = np.array([0.9, 0.7, 0.8])
    cost = np.array([10.0, 0.1, 1.0])
    assert choose(q, cost, cost_quality_tradeoff=0, schedule=SCHEDULE).index == 0
    assert choose(q, cost, cost_quality_tradeoff=10, schedule=SCHEDULE).index == 1
    assert choose(q, cost, schedule=SCHEDULE).index == 0  # default: quality


def test_ties_go_to_the_cheaper_model():
    q = np.array([0.8, 0.8])
    assert choose(q, np.array([5.0, 1.0]), cost_quality_tradeoff=0, schedule=SCHEDULE).index == 1
    # at pure cost, equal costs -> better quality
    assert choose(np.array([0.5, 0.9]), np.array([1.0, 1.0]), cost_quality_tradeoff=10, schedule=SCHEDULE).index == 1


@pytest.mark.parametrize("seed", range(30))
def test_higher_tradeoff_never_picks_a_dearer_model(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    q = rng.uniform(0.3, 1.0, n)
    cost = np.exp(rng.uniform(-6, 2, n))
    picked = [choose(q, cost, cost_quality_tradeoff=t, schedule=SCHEDULE).index for t in range(11)]
    costs = [cost[i] for i in picked]
    assert all(a >= b for a, b in zip(costs, costs[1:])), costs
    assert picked[0] == int(np.lexsort((cost, -q))[0])
    assert picked[10] == int(np.argmin(cost))


def test_two_models_switch_at_the_gap():
    # strong wins by 0.05: settings whose lambda is below the gap keep it, the rest go cheap
    q = np.array([0.85, 0.80])
    cost = np.array([1.0, 0.01])
    picks = [choose(q, cost, cost_quality_tradeoff=t, schedule=SCHEDULE).index for t in range(11)]
    assert picks == [0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]


def test_named_tradeoffs():
    q = np.array([0.9, 0.6])
    cost = np.array([1.0, 0.01])
    lat = np.array([0.5, 5.0])
    assert choose(q, cost, tradeoff="cost", schedule=SCHEDULE).index == 0  # gap .3 > lambda(5) = .1
    assert choose(np.array([0.9, 0.85]), cost, tradeoff="cost", schedule=SCHEDULE).index == 1
    # latency: the strong model is also the faster one here
    assert choose(np.array([0.88, 0.9]), cost, latency_s=lat, tradeoff="latency", schedule=SCHEDULE).index == 0
    with pytest.raises(PolicyError):
        choose(q, cost, tradeoff="speed")
    with pytest.raises(PolicyError):
        choose(q, cost, tradeoff="cost", cost_quality_tradeoff=3)
    with pytest.raises(PolicyError):
        choose(q, cost, cost_quality_tradeoff=11)


def test_single_candidate_and_costs():
    assert choose(np.array([0.1]), np.array([3.0]), cost_quality_tradeoff=7).index == 0
    cost = request_cost_usd(np.array([10.0]), np.array([30.0]), prompt_tokens=1000, output_tokens=100)
    assert cost[0] == pytest.approx((1000 * 10 + 100 * 30) / 1e6)
    assert list(normalised_log(np.array([1.0, 10.0, 100.0]))) == pytest.approx([0, 0.5, 1])
    assert list(normalised_log(np.array([2.0, 2.0]))) == [0, 0]
    assert len(policy.DEFAULT_SCHEDULE) == 11
