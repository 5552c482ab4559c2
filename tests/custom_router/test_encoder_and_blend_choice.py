"""Which blend of the base predictors the stacker keeps (the one whose calibrated out-of-fold predictions route
best, the linear head unless a blend is clearly better)."""

from __future__ import annotations

import numpy as np

from api.custom_router.model import sigmoid
from flows.custom_router import training


def test_routing_gain_is_one_for_the_oracle_order_zero_for_none_and_negative_reversed():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=(400, 2)).astype(float)
    d = y[:, 0] - y[:, 1]
    assert training.routing_gain(np.stack([d, np.zeros_like(d)], 1), y) == 1.0
    assert training.routing_gain(np.stack([-d, np.zeros_like(d)], 1), y) < -0.9
    assert abs(training.routing_gain(np.zeros_like(y), y)) < 0.15  # ties keep the row order: about random


def test_routing_gain_charges_ties_ranked_ahead_of_wins():
    y = np.array([[1, 1], [1, 0], [0, 0], [1, 0]], float)  # rows 0 and 2 are ties, 1 and 3 wins for model 0
    wins_first = np.array([[0, 0], [2, 0], [0, 0], [1, 0]], float)
    ties_first = np.array([[3, 0], [2, 0], [3, 0], [1, 0]], float)
    assert training.routing_gain(wins_first, y) == 1.0
    assert training.routing_gain(ties_first, y) < 0


def _outcomes(n: int, seed: int = 0):
    """Two models; a hidden signal says when the first one wins."""
    rng = np.random.default_rng(seed)
    signal = rng.normal(size=n)
    y = np.stack([rng.random(n) < sigmoid(2.0 * signal), rng.random(n) < 0.5], 1).astype(float)
    return rng, signal, y


def test_the_stacker_keeps_a_blend_that_routes_clearly_better_and_calibrates_it():
    rng, signal, y = _outcomes(3000)
    informed = np.stack([sigmoid(2.0 * signal), np.full(len(y), 0.5)], 1)
    noise = np.clip(rng.random(y.shape), 0.05, 0.95)
    spec, stacked = training.fit_stacker([noise, noise, informed], y)  # linear and trees blind, kNN informed
    assert spec["blend"][2] >= 0.5
    assert max(spec["routing_gain"], key=spec["routing_gain"].get) == ",".join(f"{w:.2f}" for w in spec["blend"])
    assert stacked.shape == y.shape and np.all((stacked > 0) & (stacked < 1))
    assert abs(stacked[:, 0].mean() - y[:, 0].mean()) < 0.02  # Platt: calibrated to the observed rate


def test_near_equal_blends_leave_the_linear_head_alone():
    rng, signal, y = _outcomes(600, seed=1)
    p = np.stack([sigmoid(2.0 * signal + rng.normal(0, 0.3, len(y))), np.full(len(y), 0.5)], 1)
    jitter = np.clip(p + rng.normal(0, 0.01, p.shape), 0.01, 0.99)  # the others barely differ from the linear head
    spec, _ = training.fit_stacker([p, jitter, jitter], y)
    assert spec["blend"] == [1.0, 0.0, 0.0]


def test_the_margin_a_blend_must_clear_shrinks_with_the_rows():
    assert training.linear_margin(637) > training.linear_margin(1051) > training.linear_margin(10_000) > 0
    assert abs(training.linear_margin(10_000) - 0.003) < 1e-12
