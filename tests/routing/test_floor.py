"""The default router's floor (flows/default_router/floor.py, applied in api/routing/default_router.py): a
per-prompt deviation that does not predict outcomes is shrunk away, so a pool with one dominant model routes
everything to it at t=0; one that does (a true specialist) is kept. Also: one key per model across sources, and
leaving models out."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from api.routing.default_router import DefaultRouter, load_default_router
from api.routing.router import Candidate
from flows.default_router.data import WEAK
from flows.default_router.floor import best_single, fit_shrinkage, pick_accuracy, rows_of
from flows.default_router.multi import Outcomes
from flows.default_router.shared_sets import canonical, model_key
from flows.default_router.skill_training import checked_models, without_models

KNOWLEDGE = np.array([1.0, 0.0, 0.0])


def two_models(rng: np.random.Generator, p_a: np.ndarray, p_b: np.ndarray, informative: bool):
    """Outcomes drawn from per-prompt probabilities of models A and B; the router's deviation from each model's mean
    is the truth (informative) or noise of the same size."""
    truth = np.stack([p_a, p_b], axis=1)
    outcomes = (rng.random(truth.shape) < truth).astype(float)
    means = np.broadcast_to(truth.mean(axis=0), truth.shape)
    deviations = truth - means if informative else rng.normal(0.0, 0.2, truth.shape)
    return rows_of(means, deviations, np.tile(KNOWLEDGE, (len(truth), 1)), outcomes, 1.0)


def test_a_deviation_that_predicts_nothing_is_shrunk_away_and_the_dominant_model_takes_everything():
    rng = np.random.default_rng(0)
    n = 4000
    rows = two_models(rng, np.full(n, 0.7), np.full(n, 0.5), informative=False)
    shrinkage = fit_shrinkage([rows])
    assert shrinkage[0] < 0.1
    q = rows.means + (rows.need @ shrinkage)[:, None] * rows.deviations
    assert (q.argmax(axis=1) == 0).all()  # every prompt to the dominant model at t=0
    assert pick_accuracy(rows, shrinkage) == pytest.approx(float(rows.outcomes[:, 0].mean()))
    assert pick_accuracy(rows, None) < best_single(rows) - 0.03  # trusting the noise would lose


def test_a_true_specialist_keeps_its_prompts():
    rng = np.random.default_rng(1)
    n = 4000
    special = np.arange(n) % 2 == 0  # B is far better on half the prompts, A on the other half
    rows = two_models(rng, np.where(special, 0.5, 0.8), np.where(special, 0.9, 0.3), informative=True)
    shrinkage = fit_shrinkage([rows])
    assert shrinkage[0] > 0.8
    q = rows.means + (rows.need @ shrinkage)[:, None] * rows.deviations
    assert (q.argmax(axis=1) == special.astype(int)).all()
    assert pick_accuracy(rows, shrinkage) > best_single(rows) + 0.1


@pytest.fixture(scope="module")
def shipped() -> DefaultRouter:
    return load_default_router()


def with_shrinkage(router: DefaultRouter, shrinkage: list[float]) -> DefaultRouter:
    spec = copy.deepcopy(router.spec)
    spec["floor"]["shrinkage"] = shrinkage
    return DefaultRouter(router.featurizer, spec, router.prior)


PROMPTS = ["What is the capital of Australia?\nA. Sydney\nB. Canberra\nC. Melbourne\nD. Perth\nAnswer:",
           "A train leaves at 3 pm at 60 km/h; a second leaves at 4 pm at 90 km/h. When does the second catch up?",
           "def is_palindrome(s):\n    \"\"\"Return True when s reads the same both ways.\"\"\"\n"]
POOL = [Candidate("openai", "gpt-4o-2024-08-06", 2.5, 10.0, 128000),
        Candidate("huggingface", "google/gemma-2-2b-it", 0.1, 0.1, 8192),
        Candidate("huggingface", "meta-llama/Meta-Llama-3-8B-Instruct", 0.2, 0.2, 8192)]


def test_serving_applies_the_floor_between_the_kind_mean_and_the_per_prompt_prediction(shipped):
    vectors = shipped.featurizer.featurize_batch(PROMPTS)
    z = shipped.query_heads_batch(vectors)
    raw, mean = shipped.raw_quality(z, POOL), shipped.mean_quality(z, POOL)
    alpha = shipped.need(z) @ np.asarray(shipped.spec["floor"]["shrinkage"])
    batch = shipped.predict_quality_batch(vectors, POOL)
    assert np.allclose(batch, mean + alpha[:, None] * (raw - mean))
    for i, prompt in enumerate(PROMPTS):
        assert np.allclose(shipped.predict_quality(shipped.featurizer.featurize(prompt), POOL), batch[i])
    assert np.allclose(with_shrinkage(shipped, [1.0, 1.0, 1.0]).predict_quality_batch(vectors, POOL), raw)
    floor_only = with_shrinkage(shipped, [0.0, 0.0, 0.0]).predict_quality_batch(vectors, POOL)
    assert np.allclose(floor_only, mean)
    assert (floor_only.argmax(axis=1) == 0).all()  # nothing trusted per prompt: the dominant model everywhere


def test_one_key_per_model_across_sources_and_leaving_models_out():
    assert canonical("Meta-Llama-3_1-70B-Instruct") == canonical("Meta-Llama-3.1-70B-Instruct") \
        == "huggingface/meta-llama/Meta-Llama-3.1-70B-Instruct"
    assert canonical("Mixtral-8x7B-Instruct-v0.1") == model_key(WEAK)
    assert len({canonical(m) for m in ("Llama-3.1-405B-Inst-fp8", "Llama-3.1-405B-Inst@sambanova",
                                       "Meta-Llama-3.1-405B-Instruct@hyperbolic")}) == 1
    assert canonical("claude-3-5-sonnet-20240620") == "anthropic/claude-3-5-sonnet-20240620"
    sets = {"s/a": Outcomes("s", "a", ["p", "q"], ("huggingface/x", "huggingface/y"), np.ones((2, 2))),
            "s/b": Outcomes("s", "b", ["p"], ("huggingface/x",), np.ones((1, 1)))}
    kept = without_models(sets, ("huggingface/x",))
    assert set(kept) == {"s/a"} and kept["s/a"].models == ("huggingface/y",) and kept["s/a"].scores.shape == (2, 1)
    with pytest.raises(ValueError, match="cannot name"):
        checked_models((WEAK,))
