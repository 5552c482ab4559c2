"""RouteLLM metrics against hand-computed values."""

import math

import numpy as np
import pytest

from flows.evaluation import (
    Curve,
    apgr,
    closed_at_strong,
    cpt,
    curve_from_choices,
    oracle_curve,
    pgr,
    random_curve,
    summarize,
    threshold_curve,
)


def test_pgr():
    assert pgr(0.75, 0.5, 1.0) == 0.5
    assert pgr(0.5, 0.5, 1.0) == 0.0


def test_apgr_of_random_router_is_half():
    strong = np.array([1, 1, 0, 1], float)
    weak = np.array([0, 1, 0, 0], float)
    curve = random_curve(strong, weak)
    m = summarize(curve, weak.mean(), strong.mean())
    assert m.apgr == pytest.approx(0.5)
    assert m.cpt50 == pytest.approx(0.5)
    assert m.cpt80 == pytest.approx(0.8)


def test_apgr_hand_computed():
    # weak 0.6, strong 0.8; curve (0,.6) (.5,.75) (1,.8)
    curve = Curve.of([1.0, 0.0, 0.5], [0.8, 0.6, 0.75])  # unsorted input gets sorted by share
    # AUC = .5*(.6+.75)/2 + .5*(.75+.8)/2 = .3375 + .3875 = .725; weak AUC .6, strong .8 -> (.725-.6)/.2 = .625
    assert apgr(curve, 0.6, 0.8) == pytest.approx(0.625)
    # PGR 0.5 -> score .7: between (0,.6) and (.5,.75): share = .5 * (.1/.15) = 1/3
    assert cpt(curve, 0.6, 0.8, 0.5) == pytest.approx(1 / 3)
    # PGR 0.8 -> .76: between (.5,.75) and (1,.8): .5 + .5*(.01/.05) = .6
    assert cpt(curve, 0.6, 0.8, 0.8) == pytest.approx(0.6)


def test_a_sweep_that_stops_short_is_closed_with_always_strong():
    # weak 0.6, strong 0.8; the router reaches 0.8 already at share 0.5 and its sweep ends there
    short = Curve.of([0.0, 0.5], [0.6, 0.8])
    assert apgr(short, 0.6, 0.8) == pytest.approx(0.5)  # its own range hides the flat, fully recovered right end
    closed = closed_at_strong(short, 0.8)
    assert list(closed.shares) == [0.0, 0.5, 1.0] and list(closed.scores) == [0.6, 0.8, 0.8]
    # AUC .5*(.6+.8)/2 + .5*.8 = .75 -> (.75-.6)/.2 = .75: better than a router that needs every call for 0.8
    assert apgr(closed, 0.6, 0.8) == pytest.approx(0.75)
    full = Curve.of([0.0, 1.0], [0.6, 0.8])
    assert closed_at_strong(full, 0.8) is full  # already reaches share 1: unchanged


def test_cpt_never_reached_is_nan():
    curve = Curve.of([0, 1], [0.6, 0.7])
    assert math.isnan(cpt(curve, 0.6, 0.8, 0.8))


def test_threshold_curve_matches_routellm_rules():
    scores = np.array([0.1, 0.2, 0.3, 0.4])
    strong = np.array([1, 1, 1, 1], float)
    weak = np.array([1, 1, 0, 0], float)
    curve = threshold_curve(scores, strong, weak, num_results=2)
    # thresholds: .1, .25, .4 ; >= .1 -> all strong; >= .25 -> 2 strong; last uses '>' .4 -> none
    assert list(curve.shares) == [0.0, 0.5, 1.0]
    assert list(curve.scores) == [0.5, 1.0, 1.0]
    assert apgr(curve, 0.5, 1.0) == pytest.approx(0.75)


def test_curve_from_choices():
    choose = np.array([[True, True], [False, True], [False, False]])
    curve = curve_from_choices(choose, np.array([1.0, 1.0]), np.array([1.0, 0.0]))
    assert list(curve.shares) == [0.0, 0.5, 1.0]
    assert list(curve.scores) == [0.5, 1.0, 1.0]


def test_oracle_curve_binary_and_graded():
    strong = np.array([1, 1, 0, 1], float)
    weak = np.array([1, 0, 1, 0], float)
    curve = oracle_curve(strong, weak, points=5)  # shares 0, .25, .5, .75, 1
    # weak correct 2; two items gain 1 -> .5, .75, 1, 1, 1
    assert list(curve.scores) == [0.5, 0.75, 1.0, 1.0, 1.0]
    graded = oracle_curve(np.array([9.0, 5.0]), np.array([7.0, 6.0]), points=3)
    assert list(graded.scores) == [6.5, 7.5, 7.5]


def test_no_gap_gives_nan_not_an_error():
    curve = Curve.of([0, 1], [0.5, 0.5])
    assert math.isnan(apgr(curve, 0.5, 0.5))
    assert math.isnan(pgr(0.5, 0.5, 0.5))
