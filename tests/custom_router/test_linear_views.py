"""English uploads small enough get an e5 view beside the static one; the two linear heads are mixed by out-of-fold
routing gain and served as one matrix."""

from __future__ import annotations

import numpy as np

from api.custom_router import encoders, training
from api.custom_router.model import logit, sigmoid


def test_small_english_uploads_get_e5_and_large_ones_stay_static():
    from api.settings import Settings

    assert Settings.custom_router_e5_max_chars == 0  # opt-in
    limit = 600_000
    small, large = ["What is 2 + 2?"] * 100, ["x" * 1000] * (limit // 1000 + 1)
    assert encoders.encoder_name_for_upload("english", small, limit) == "english+e5"
    assert encoders.encoder_name_for_upload("english", large, limit) == "english"
    assert encoders.encoder_name_for_upload("english", small, 0) == "english"  # 0 turns the e5 view off
    assert encoders.encoder_name_for_upload("multilingual", small, limit) == "multilingual"


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


def _two_view_data(n: int = 600, seed: int = 0):
    """View 1 is noise; view 2 carries which model wins."""
    rng = np.random.default_rng(seed)
    noise, signal = rng.normal(size=(n, 8)), rng.normal(size=(n, 6))
    p_strong = sigmoid(2.0 * signal[:, 0])
    y = np.stack([rng.random(n) < p_strong, rng.random(n) < 0.5], 1).astype(float)
    x = np.hstack([noise, signal]).astype(np.float32)
    views = (("static", slice(0, 8), 0.3), ("e5", slice(8, 14), 1.0))
    return x, y, views


def test_the_mix_follows_the_informative_view_and_is_one_linear_head():
    x, y, views = _two_view_data()
    folds = training.fold_ids([str(i) for i in range(len(x))], 5)
    cfg = training.TrainConfig(folds=5)
    oof, weights, info = training.linear_views_oof(x, y, folds, views, cfg, log=lambda *_: None)
    assert info["views"] == ["static", "e5"] and info["mix"][1] >= 0.75
    assert info["routing_gain"]["0.00,1.00"] > info["routing_gain"]["1.00,0.00"]
    assert weights.shape == (x.shape[1] + 1, 2) and oof.shape == y.shape

    # The served matrix is exactly the mix of the two heads' logits, each fitted on its own columns.
    a = info["mix"][1]
    w1 = training.fit_logistic(x[:, views[0][1]], y, views[0][2], start=None)
    w2 = training.fit_logistic(x[:, views[1][1]], y, views[1][2], start=None)
    mixed = (1 - a) * logit(training.predict_logistic(x[:, views[0][1]], w1)) + a * logit(
        training.predict_logistic(x[:, views[1][1]], w2))
    served = logit(training.predict_logistic(x, weights))
    np.testing.assert_allclose(served, mixed, atol=2e-3)


def test_one_view_is_the_plain_linear_head():
    x, y, views = _two_view_data()
    folds = training.fold_ids([str(i) for i in range(len(x))], 3)
    cfg = training.TrainConfig(folds=3)
    oof, weights, info = training.linear_views_oof(x, y, folds, (("static", slice(0, 14), 0.3),), cfg)
    plain_oof, plain = training.linear_oof(x, y, folds, cfg)
    assert info["mix"] == [1.0]
    np.testing.assert_array_equal(oof, plain_oof)
    np.testing.assert_array_equal(weights, plain)
