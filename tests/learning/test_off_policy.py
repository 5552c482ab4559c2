"""Off-policy evaluation against cases whose answer is known, and the fit's shrinkage."""

from __future__ import annotations

import numpy as np

from api.selection.learned import Correction
from flows.learning.fit import fit_correction
from flows.learning.learn import learn
from flows.learning.off_policy import actions, compare, corrected_quality, interval, per_row_values
from flows.learning.residual import residual_quality
from flows.learning.table import Evidence

KEYS = ["acme/strong", "acme/cheap"]
DIM = 8


def logged(n: int, seed: int, explore: float = 0.3):
    """Two kinds of prompt (embedding +e0 or -e0). The router says strong 0.8 / cheap 0.7 everywhere; the truth is
    strong 0.8 everywhere, cheap 0.9 on kind A and 0.3 on kind B. Lambda 0.05 on the cost position: the router
    picks strong, and the log explores cheap with probability `explore`."""
    rng = np.random.default_rng(seed)
    kind_a = rng.random(n) < 0.5
    emb = rng.normal(0, 0.1, (n, DIM))
    emb[:, 0] = np.where(kind_a, 1.0, -1.0)
    features = np.hstack([emb, np.zeros((n, 2))])
    truth = np.stack([np.full(n, 0.8), np.where(kind_a, 0.9, 0.3)], axis=1)
    chosen = (rng.random(n) < explore).astype(int)
    propensity = np.where(chosen == 1, explore, 1 - explore)
    label = (rng.random(n) < truth[np.arange(n), chosen]).astype(float)
    ev = Evidence([str(i) for i in range(n)], KEYS, np.tile([0, 1], (n, 1)), np.ones((n, 2), bool),
                  np.tile([0.8, 0.7], (n, 1)), np.tile([1.0, 0.0], (n, 1)), np.full(n, 0.05), chosen, propensity,
                  label, features)
    return ev, truth, kind_a


def test_ips_and_dr_cover_the_true_value_of_a_policy_the_log_did_not_follow():
    ev, truth, kind_a = logged(20_000, seed=1)
    target = np.where(kind_a, 1, 0)  # cheap on kind A, strong on kind B: worth 0.85 on average
    true_value = float(truth[np.arange(len(ev)), target].mean())
    reward = np.tile([0.5, 0.5], (len(ev), 1))  # a poor reward model: DR stays unbiased through the propensities
    ips, dr = per_row_values(ev, target, reward)
    for values in (ips, dr):
        estimate = interval(values)
        assert estimate.low <= true_value <= estimate.high
        assert estimate.high - estimate.low < 0.05
    logging_value = interval(per_row_values(ev, np.zeros(len(ev), int), reward)[0])
    assert logging_value.low <= 0.8 <= logging_value.high  # always-strong: 0.8


def test_the_fit_learns_the_kinds_and_the_comparison_promotes_it_on_held_out_rows():
    ev, truth, kind_a = logged(12_000, seed=2)
    older, recent = ev.rows(np.arange(6000)), ev.rows(np.arange(6000, 12_000))
    params, per_model = fit_correction(older.features, older.chosen_models(), older.chosen_quality(), older.label,
                                       "v", DIM)
    challenger = Correction.of("c", params)
    q = corrected_quality(recent, challenger)
    picks = actions(recent, q)
    assert (picks[kind_a[6000:]] == 1).mean() > 0.9 and (picks[~kind_a[6000:]] == 0).mean() > 0.9
    result = compare(recent, challenger, None)  # truly +0.05: 0.85 against always-strong's 0.8
    for estimator in ("dr", "ips"):
        assert 0 < result[estimator]["difference"]["low"] <= 0.05 <= result[estimator]["difference"]["high"]


def test_random_labels_leave_the_per_cluster_deviations_near_zero():
    ev, _, _ = logged(4_000, seed=3)
    noise = (np.random.default_rng(4).random(len(ev)) < 0.5).astype(float)
    params, per_model = fit_correction(ev.features, ev.chosen_models(), ev.chosen_quality(), noise, "v", DIM)
    assert all(abs(w) < 0.03 for row in params.weights for w in row)
    assert all(s["pseudo_count"] >= 100 for s in per_model.values())


def test_the_flow_scores_the_residual_as_a_challenger_and_keeps_noise_out():
    """The nearest-neighbour residual is promoted only through the same gate as the cluster correction: where the
    labels say the cheap model is far better on kind A (0.95 against 0.5) it is better on held-out rows; on a fair
    coin neither challenger is promoted."""
    ev, _, kind_a = logged(3_000, seed=5)
    truth = np.stack([np.full(len(ev), 0.5), np.where(kind_a, 0.95, 0.05)], axis=1)
    rng = np.random.default_rng(6)

    def relabelled(label: np.ndarray) -> Evidence:
        return Evidence(ev.session_ids, ev.models, ev.model, ev.valid, ev.router_quality, ev.position, ev.lam,
                        ev.chosen, ev.propensity, label, ev.features)

    real = relabelled((rng.random(len(ev)) < truth[np.arange(len(ev)), ev.chosen]).astype(float))
    older, recent = real.rows(np.arange(2_400)), real.rows(np.arange(2_400, 3_000))
    picks = actions(recent, residual_quality(older, recent))
    assert (picks[kind_a[2_400:]] == 1).mean() > 0.9 and (picks[~kind_a[2_400:]] == 0).mean() > 0.9
    outcome = learn(real, None, "v", curve=False)
    assert outcome.promote
    for name in ("cluster correction", "nearest-neighbour residual"):
        challenger = outcome.evaluation["challengers"][name]
        assert challenger["dr"]["low"] > 0 and challenger["ips"]["low"] > 0
    assert outcome.evaluation["challengers"]["lexical learner"] is None  # no texts in this evidence
    kept = learn(relabelled((rng.random(len(ev)) < 0.5).astype(float)), None, "v", curve=False)
    assert not kept.promote and kept.evaluation["decision"] == "kept the champion"


def test_the_residual_challenger_learns_from_caller_feedback_only():
    """The memory the service applies holds caller feedback (api/selection/feedback.py), so the challenger the flow
    scores for it must too: a judge's verdicts (label_source 'judge') do not move it."""
    ev, _, _ = logged(2_000, seed=7)
    older, recent = ev.rows(np.arange(1_600)), ev.rows(np.arange(1_600, 2_000))
    judged = Evidence(older.session_ids, older.models, older.model, older.valid, older.router_quality,
                      older.position, older.lam, older.chosen, older.propensity, np.zeros(len(older)),
                      older.features, caller_feedback=np.zeros(len(older), bool))
    assert np.array_equal(residual_quality(judged, recent), recent.router_quality)
    as_feedback = Evidence(*[getattr(judged, f) for f in ("session_ids", "models", "model", "valid",
                                                          "router_quality", "position", "lam", "chosen",
                                                          "propensity", "label", "features")])
    assert not np.array_equal(residual_quality(as_feedback, recent), recent.router_quality)
