"""The lexical learner of issue 33: features, fit, gate and serving, on cases whose answer is known. Deterministic
logs (propensity 1.0, no exploration) are the point: it must learn from them, and keep random labels out."""

from __future__ import annotations

import msgspec
import numpy as np

from api.selection.learned import Correction, parse
from api.selection.lexical import (DIM, FEATURE_VERSION, LexicalModel, LexicalParameters, SparseWeights, encode_array,
                                   featurize)
from flows.learning.fit import unit_rows
from flows.learning.lexical_fit import fit_lexical, held_out_shift
from flows.learning.learn import learn, lexical_challenger
from flows.learning.off_policy import corrected_quality
from flows.learning.table import Evidence, scored_text

KEYS = ["acme/strong", "acme/cheap"]
EMB = 8
TOPICS = ["river", "garden", "market", "castle", "harbour", "forest", "bridge", "valley"]


def prompt(i: int, trap: bool) -> str:
    topic = TOPICS[i % len(TOPICS)]
    twist = "with a zebra crossing puzzle" if trap else f"about item {i % 13}"
    return f"Question {i}: describe the {topic} {twist} in two sentences."


def logged(n: int, seed: int, random_labels: bool = False):
    """One kind of prompt (embeddings near one direction). The router's gap varies at random, lambda is its median:
    half the decisions go to each model, deterministically. The truth: the strong model answers 0.85 everywhere;
    the cheap one 0.9, but 0.1 on prompts with the word "zebra" (a quarter), which the router cannot see. (Cheap
    better than strong elsewhere, so no per-model level alone routes well: with the cheap one at 0.75, the router
    recalibrated by the cheap model's mean sent every prompt to the strong one and left the learner +0.004 to gain
    at the logged trade-off, which only an in-sample replay saw as a gain.)"""
    rng = np.random.default_rng(seed)
    trap = rng.random(n) < 0.25
    texts = [prompt(i, bool(t)) for i, t in enumerate(trap)]
    emb = np.hstack([np.ones((n, 1)), rng.normal(0, 0.05, (n, EMB - 1))])
    quality = np.stack([np.full(n, 0.8), 0.8 - rng.uniform(0.0, 0.3, n)], axis=1)
    lam = float(np.median(quality[:, 0] - quality[:, 1]))
    chosen = np.where(quality[:, 0] - lam > quality[:, 1], 0, 1)
    truth = np.stack([np.full(n, 0.85), np.where(trap, 0.1, 0.9)], axis=1)
    label = (rng.random(n) < truth[np.arange(n), chosen]).astype(float)
    if random_labels:
        label = (rng.random(n) < 0.5).astype(float)
    ev = Evidence([str(i) for i in range(n)], KEYS, np.tile([0, 1], (n, 1)), np.ones((n, 2), bool), quality,
                  np.tile([1.0, 0.0], (n, 1)), np.full(n, lam), chosen, np.ones(n), label, emb, None, texts)
    return ev, trap


def test_features_are_deterministic_sparse_and_unit_length():
    index, values = featurize("The Zebra crossing, the zebra!")
    again = featurize("the zebra crossing, THE ZEBRA!")
    assert np.array_equal(index, again[0]) and np.allclose(values, again[1])  # case does not matter
    assert np.all(np.diff(index) > 0) and index.min() >= 0 and index.max() < DIM
    assert abs(float(np.linalg.norm(values)) - 1.0) < 1e-9
    other = featurize("A poem about spring rain")
    assert len(np.intersect1d(index, other[0])) < 0.2 * len(index)
    empty = featurize("")
    assert len(empty[0]) == len(empty[1])


def test_sparse_weights_dot_is_the_dense_dot():
    rng = np.random.default_rng(0)
    dense = np.zeros(DIM)
    where = rng.choice(DIM, 500, replace=False)
    dense[where] = rng.normal(size=500)
    weights = SparseWeights(where, dense[where])
    index, values = featurize("some words to score against the learned weights")
    expected = float(dense[index] @ values)
    assert abs(weights.dot(index, values) - expected) < 1e-9
    assert SparseWeights(np.zeros(0, dtype=np.int64), np.zeros(0)).dot(index, values) == 0.0


def test_the_fit_finds_what_the_cheap_model_fails_from_bandit_feedback():
    ev, trap = logged(1_200, seed=1)
    fit = fit_lexical(ev.texts, ev.features, ev.chosen_models(), ev.chosen_quality(), ev.label, ev.propensity)
    assert fit is not None and set(fit.models) == set(KEYS) and fit.replay_gain.mean() > 0
    fresh, fresh_trap = logged(400, seed=2)
    params = lexical_challenger(ev, None, "v")[0]
    q = corrected_quality(fresh, Correction.of("c", params))
    cheap = q[:, 1]
    assert cheap[fresh_trap].mean() < cheap[~fresh_trap].mean() - 0.3  # a prompt it never saw, by its words
    gap = q[:, 0] - q[:, 1]
    assert gap[fresh_trap].mean() > gap[~fresh_trap].mean() + 0.3  # zebra prompts rank above the others


def test_the_gate_promotes_a_gain_from_deterministic_logs_and_refuses_random_labels():
    ev, _ = logged(1_500, seed=3)
    assert np.all(ev.propensity == 1.0)
    outcome = learn(ev, None, "v", curve=False)
    lexical = outcome.evaluation["lexical"]
    assert outcome.promote and outcome.evaluation["kind"] == "lexical learner", lexical
    assert lexical["replay_error_gain"]["value"] > 0 and lexical["dm_difference"]["low"] > 0
    assert outcome.parameters.lexical is not None
    for seed in (4, 5, 6):
        noise, _ = logged(1_500, seed=seed, random_labels=True)
        kept = learn(noise, None, "v", curve=False)
        assert not kept.promote and kept.evaluation["decision"] == "kept the champion", kept.evaluation["lexical"]


def test_a_stored_version_serves_the_learner_and_leaves_unfamiliar_prompts_alone():
    ev, _ = logged(1_200, seed=7)
    params = lexical_challenger(ev, None, "v")[0]
    correction = parse("v1", msgspec.json.encode(params).decode())  # the stored form, as the service loads it
    features = np.r_[1.0, np.zeros(EMB - 1), 0.3, 0.7]  # the embedding, then hand features
    base = np.array([0.8, 0.7])
    trap = correction.apply(features, KEYS, base, prompt(3, True), EMB)
    plain = correction.apply(features, KEYS, base, prompt(3, False), EMB)
    assert trap[1] < plain[1] - 0.2
    far = np.r_[0.0, 1.0, np.zeros(EMB - 2), 0.3, 0.7]  # orthogonal to every prompt it learned from
    assert np.array_equal(correction.apply(far, KEYS, base, prompt(3, True), EMB), base)
    assert np.array_equal(correction.apply(features, ["acme/other", "acme/else"], base, prompt(3, True), EMB), base)


def test_the_scored_text_is_read_back_from_stored_messages():
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "zebra question"}]
    assert scored_text(msgspec.json.encode(messages).decode()) == "zebra question"
    assert scored_text(None) == "" and scored_text("not json") == "" and scored_text('{"role": 3}') == ""


def ramp_model(familiar_full: float | None, serve_intercept: bool = False) -> LexicalModel:
    """One known model whose prompt-level adjustment is +0.2 on the text TEXT (its lexical weights) and whose mean
    residual b_m is +0.3; one centroid along the first axis."""
    index, values = featurize(TEXT)
    return LexicalModel(LexicalParameters(
        feature_version=FEATURE_VERSION, models=[KEYS[1]], intercept=[0.3], index=[encode_array(index, "<i4")],
        values=[encode_array(0.2 * values / float(values @ values), "<f4")], embedding=[[0.0] * EMB],
        centroids=[[1.0] + [0.0] * (EMB - 1)], familiar=0.5, familiar_full=familiar_full,
        serve_intercept=serve_intercept))


TEXT = "how many apples are left"


def at_cosine(c: float) -> np.ndarray:
    return np.r_[c, np.sqrt(1.0 - c * c), np.zeros(EMB - 2)]


def test_the_adjustment_fades_in_with_familiarity_and_vanishes_for_unlike_prompts():
    model = ramp_model(0.9)
    base = np.array([0.5, 0.5])
    moved = {c: model.apply(TEXT, at_cosine(c), KEYS, base)[1] - 0.5 for c in (0.3, 0.5, 0.7, 0.9, 0.99)}
    assert moved[0.3] == 0.0                      # unlike every training prompt: the router alone
    assert abs(moved[0.7] - 0.1) < 1e-6           # half way up the ramp: half the adjustment (float32 weights)
    assert abs(moved[0.9] - 0.2) < 1e-6 and abs(moved[0.99] - 0.2) < 1e-6  # the mean residual b_m is not served
    assert moved[0.5] < moved[0.7] < moved[0.9]
    assert model.apply(TEXT, at_cosine(0.7), KEYS, base)[0] == 0.5  # a model it was not fitted on: untouched
    legacy = ramp_model(None, serve_intercept=True)  # stored before the ramp: b_m too, all or nothing at `familiar`
    assert abs(legacy.apply(TEXT, at_cosine(0.6), KEYS, base)[1] - 1.0) < 1e-6
    assert legacy.apply(TEXT, at_cosine(0.4), KEYS, base)[1] == 0.5


def test_the_fit_records_a_ramp_its_own_prompts_mostly_clear():
    ev, _ = logged(600, seed=8)
    fit = fit_lexical(ev.texts, ev.features, ev.chosen_models(), ev.chosen_quality(), ev.label, ev.propensity)
    assert fit is not None and fit.familiar <= fit.familiar_full
    cosine = (unit_rows(ev.features) @ fit.centroids.T).max(axis=1)
    assert 0.7 <= float(np.mean(cosine >= fit.familiar_full)) <= 0.8  # the ramp's top is the 25 % quantile
    assert float(np.mean(cosine >= fit.familiar)) >= 0.94


def test_held_out_shift_is_refitting_without_the_row():
    rng = np.random.default_rng(0)
    n, models, penalty = 40, 2, 0.7
    x = rng.normal(size=(n, 6))
    model_of = rng.integers(0, models, n)
    w = rng.uniform(0.5, 3.0, n)
    r = rng.normal(size=n)
    gram = x @ x.T

    def kernel(rows_a, model_a, rows_b, model_b):
        return gram[np.ix_(rows_a, rows_b)] * (1.0 + (model_a[:, None] == model_b[None, :]))

    def fit(rows):
        root = np.sqrt(w[rows])
        k = kernel(rows, model_of[rows], rows, model_of[rows])
        return root * np.linalg.solve(k * root[:, None] * root[None, :] + penalty * np.eye(len(rows)), root * r[rows])

    everything = np.arange(n)
    dual = fit(everything)
    root = np.sqrt(w)
    s, q = np.linalg.eigh(kernel(everything, model_of, everything, model_of) * root[:, None] * root[None, :])
    predicted = {m: kernel(everything, np.full(n, m), everything, model_of) @ dual for m in range(models)}
    loo = np.empty(n)
    brute = np.empty((n, models))
    for i in range(n):
        rest = np.delete(everything, i)
        d = fit(rest)
        for m in range(models):
            brute[i, m] = kernel(np.array([i]), np.array([m]), rest, model_of[rest])[0] @ d
        loo[i] = r[i] - brute[i, model_of[i]]
    shift = held_out_shift(gram, model_of, models, root, q, np.clip(s, 0.0, None) + penalty, loo, np.zeros(n))
    for m in range(models):
        assert np.allclose(predicted[m] + shift[:, m], brute[:, m], atol=1e-8)
