"""The trade-off dial calibrated to a caller's own traffic (api/routing/dial.py): each step of cost_quality_tradeoff
moves about a tenth of that caller's calls towards the cheaper model, whatever the prompts; a caller with no history
is calibrated on the shipped pool; callers are kept apart and bounded."""

from __future__ import annotations

import numpy as np
import pytest

from api.routing.dial import TrafficDial, calibrate

DEAR, CHEAP = ("a/dear", "b/cheap")
CALLER = ("alice", "", (DEAR, CHEAP))
POSITION = np.array([1.0, 0.0])  # cost position per candidate, sorted keys: a/dear is dear


def shares(schedule, quality: np.ndarray) -> list[float]:
    """Share of decisions the policy sends to the dear candidate at each setting."""
    out = []
    for lam in schedule:
        if np.isinf(lam):
            out.append(0.0)
            continue
        utility = quality - lam * POSITION[None, :] - 1e-12 * POSITION[None, :]
        out.append(float((utility.argmax(axis=1) == 0).mean()))
    return out


def traffic(n: int, centre: float, spread: float, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dear = np.clip(centre + spread * rng.standard_normal(n), 0.01, 0.99)
    return np.stack([dear, np.clip(dear - rng.uniform(0, 2 * spread, n), 0.0, 1.0)], axis=1)


@pytest.mark.parametrize("centre, spread", [(0.9, 0.02), (0.6, 0.2), (0.3, 0.001)])
def test_each_step_moves_about_a_tenth_of_the_traffic_whatever_the_gaps(centre, spread):
    quality = traffic(400, centre, spread)
    schedule = calibrate(quality, np.tile(POSITION, (len(quality), 1)), np.ones(len(quality)))
    assert schedule[0] == 0.0 and np.isinf(schedule[-1])
    assert list(schedule) == sorted(schedule)  # monotone: a higher setting never picks a dearer model
    got = shares(schedule, quality)
    assert got[0] == 1.0 and got[-1] == 0.0
    assert max(abs(a - b) for a, b in zip(got, got[1:])) <= 0.15
    assert all(abs(s - (10 - t) / 10) <= 0.06 for t, s in enumerate(got))


def test_identical_gaps_are_split_by_the_tie_breaker():
    quality = np.tile([0.8, 0.6], (200, 1)) + np.random.default_rng(1).integers(0, 256, (200, 2)) * (1e-6 / 256)
    schedule = calibrate(quality, np.tile(POSITION, (200, 1)), np.ones(200))
    got = shares(schedule, quality)
    assert max(abs(a - b) for a, b in zip(got, got[1:])) <= 0.15


def test_a_new_caller_gets_the_fallback_then_the_pool_then_its_own_traffic():
    pool = traffic(300, 0.6, 0.2, seed=2)
    dial = TrafficDial(lambda candidates: (pool, np.tile(POSITION, (len(pool), 1))))
    trained = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, float("inf"))
    assert dial.schedule_for(CALLER, ["dear", "cheap"], trained) == trained  # the pool is not scored yet
    dial.refresh()
    from_pool = dial.schedule_for(CALLER, ["dear", "cheap"], trained)
    assert from_pool != trained and from_pool == calibrate(pool, np.tile(POSITION, (300, 1)), np.ones(300))
    own = traffic(400, 0.95, 0.01, seed=3)  # this caller's prompts all have tiny gaps
    for q in own:
        dial.record(CALLER, q, POSITION)
    dial.refresh()
    mine = dial.schedule_for(CALLER, ["dear", "cheap"], trained)
    got = shares(mine, own)
    assert max(abs(a - b) for a, b in zip(got, got[1:])) <= 0.15
    assert shares(from_pool, own)[1] == 0.0  # the pool's schedule alone would have been a cliff for this traffic


def test_callers_are_kept_apart_and_bounded():
    dial = TrafficDial(lambda candidates: None, max_callers=3)
    for user in ("u1", "u2", "u3", "u4"):
        for q in traffic(40, 0.5, 0.1, seed=len(user)):
            dial.record((user, "", (DEAR, CHEAP)), q, POSITION)
    assert len(dial._callers) == 3 and ("u1", "", (DEAR, CHEAP)) not in dial._callers
    dial.refresh()
    assert all(h.schedule is not None for h in dial._callers.values())


def test_many_candidates_keep_a_short_window():
    keys = tuple(f"p/m{i:03d}" for i in range(100))
    dial = TrafficDial(lambda candidates: None)
    dial.record(("u", "", keys), np.linspace(0, 1, 100), np.linspace(0, 1, 100))
    assert dial._callers[("u", "", keys)].quality.shape == (40, 100)


def test_bisection_finds_the_same_lambdas_as_reading_the_whole_curve():
    """calibrate bisects; the definition reads the mean cost position at every candidate lambda."""
    from api.routing.dial import GRID, mean_cost_position, switch_points

    def by_definition(quality, position, weights):
        lambdas = np.unique(np.concatenate([GRID, switch_points(quality, position) * (1 + 1e-9)]))
        curve = mean_cost_position(quality, position, weights, lambdas)
        bottom = float(position.min(axis=1) @ weights / weights.sum())
        out = [0.0]
        for t in range(1, 10):
            reached = np.flatnonzero(curve <= curve[0] - t / 10 * (curve[0] - bottom) + 1e-12)
            out.append(float(lambdas[reached[0]]) if len(reached) else float(lambdas[-1]))
        return np.maximum.accumulate(np.array(out + [np.inf]))

    rng = np.random.default_rng(7)
    for trial in range(60):
        n, m = int(rng.integers(1, 120)), int(rng.integers(2, 9))
        quality, position = rng.random((n, m)), rng.random((n, m))
        if trial % 3 == 0:
            quality = np.round(quality, 1)  # ties
        weights = rng.random(n) + 0.1
        assert np.array_equal(np.array(calibrate(quality, position, weights)),
                              by_definition(quality, position, weights)), trial
