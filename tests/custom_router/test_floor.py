"""The floor (flows/custom_router/floor.py): a router does not route below the best single model at t = 0 on noise,
still uses a true specialist, still follows per-prompt predictions that carry signal, and serves what it learned."""

from __future__ import annotations

import numpy as np

from api.custom_router.model import sigmoid
from flows.custom_router import floor
from flows.custom_router.training import fold_ids


def _embeddings(n: int, groups: np.ndarray, rng) -> np.ndarray:
    """Prompts of each group near their own direction (the router's kNN features), unit rows."""
    centres = np.eye(16)[:groups.max() + 1] * 3.0
    e = centres[groups] + rng.normal(size=(n, 16))
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def _folds(n: int) -> np.ndarray:
    return fold_ids([f"prompt {i}" for i in range(n)], 5)


def test_a_dominant_model_gets_every_prompt_at_t0_despite_noisy_predictions():
    rng = np.random.default_rng(0)
    n, m = 1500, 9
    y = (rng.random((n, m)) < np.array([0.75] + [0.62] * (m - 1))).astype(float)
    p = np.clip(0.65 + rng.normal(0, 0.12, (n, m)), 0.01, 0.99)  # per-prompt predictions that know nothing
    emb = _embeddings(n, rng.integers(0, 3, n), rng)
    assert y[np.arange(n), p.argmax(axis=1)].mean() < y[:, 0].mean() - 0.05  # argmax of noise: the winner's curse
    chosen, report, nested = floor.fit_floor(p, y, emb, _folds(n), log=lambda *_: None)
    assert np.all(chosen.predict(p, emb).argmax(axis=1) == 0)
    assert np.all(nested.argmax(axis=1) == 0)
    assert report["best_single_quality"] == round(float(y[:, 0].mean()), 4)


def test_a_true_specialist_keeps_its_cluster_of_prompts():
    rng = np.random.default_rng(1)
    n = 1500
    group = rng.integers(0, 3, n)
    rate = np.tile([0.80, 0.55, 0.60], (n, 1))
    rate[group == 2] = [0.50, 0.90, 0.55]  # model 1 is the specialist of the third kind of prompt
    y = (rng.random(rate.shape) < rate).astype(float)
    p = np.clip(0.65 + rng.normal(0, 0.1, y.shape), 0.01, 0.99)
    emb = _embeddings(n, group, rng)
    chosen, report, _ = floor.fit_floor(p, y, emb, _folds(n), log=lambda *_: None)
    picks = chosen.predict(p, emb).argmax(axis=1)
    assert report["clusters"] >= 2 and not report["routes_as_best_single_model_at_t0"]
    assert (picks[group == 2] == 1).mean() > 0.9 and (picks[group != 2] == 0).mean() > 0.9
    assert report["cv_router_quality_t0"] > report["best_single_quality"] + 0.03


def test_predictions_with_per_prompt_signal_keep_a_positive_shrinkage():
    rng = np.random.default_rng(2)
    n = 1200
    signal = rng.normal(size=n)
    rate = np.stack([sigmoid(2.5 * signal), np.full(n, 0.5)], 1)
    y = (rng.random(rate.shape) < rate).astype(float)
    p = np.stack([sigmoid(2.5 * signal + rng.normal(0, 0.3, n)), np.full(n, 0.5)], 1)
    emb = _embeddings(n, np.zeros(n, int), rng)
    chosen, report, nested = floor.fit_floor(p, y, emb, _folds(n), log=lambda *_: None)
    assert chosen.s[0] > 0 and not report["routes_as_best_single_model_at_t0"]
    assert report["cv_gain_points"] > 5
    assert np.all((nested > 0) & (nested < 1))


def test_the_floor_is_the_same_for_the_same_rows_and_round_trips_through_its_spec():
    rng = np.random.default_rng(3)
    n = 900
    group = rng.integers(0, 3, n)
    y = (rng.random((n, 3)) < 0.6).astype(float)
    p = np.clip(0.6 + rng.normal(0, 0.1, y.shape), 0.01, 0.99)
    emb = _embeddings(n, group, rng)
    first = floor.fit_floor(p, y, emb, _folds(n), log=lambda *_: None)
    second = floor.fit_floor(p, y, emb, _folds(n), log=lambda *_: None)
    assert first[1] == second[1] and first[0].spec() == second[0].spec()
    spec = first[0].spec()
    again = floor.Floor(*(np.asarray(spec[k]) for k in ("centroids", "mu", "pbar", "s")), tie=spec["tie"])
    np.testing.assert_allclose(again.predict(p, emb), first[0].predict(p, emb), atol=1e-5)


def test_the_dial_still_trades_quality_for_cost_on_a_router_that_routes_as_one_model():
    from flows.custom_router import calibration

    rng = np.random.default_rng(4)
    n, m = 1200, 4
    y = (rng.random((n, m)) < np.array([0.75, 0.62, 0.62, 0.5])).astype(float)
    p = np.clip(0.6 + rng.normal(0, 0.12, (n, m)), 0.01, 0.99)
    emb = _embeddings(n, rng.integers(0, 3, n), rng)
    chosen, report, nested = floor.fit_floor(p, y, emb, _folds(n), log=lambda *_: None)
    assert report["routes_as_best_single_model_at_t0"]
    cost = calibration.request_costs(np.full(n, 400), np.array([10.0, 3.0, 1.0, 0.1]), np.array([30.0, 9.0, 3.0, 0.3]))
    schedule = calibration.calibrate_schedule(chosen.predict(p, emb), cost)
    table = calibration.evaluate(nested, y, cost, schedule, ["a", "b", "c", "d"])["table"][:11]
    spend = [row["cost_per_1k"] for row in table]
    assert table[0]["shares"] == {"a": 1.0} and table[10]["shares"] == {"d": 1.0}
    # Spend never rises along the dial and moves by steps: the tie-breaking weight orders the prompts, so they do not
    # all leave the best model at the same setting (without it, t = 1..9 all sent everything to it).
    assert report["tie"] > 0
    assert all(later <= earlier for earlier, later in zip(spend, spend[1:]))
    assert spend[0] > spend[3] > spend[6] > spend[9] > spend[10]
