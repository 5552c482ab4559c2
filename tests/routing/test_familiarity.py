"""The default router's familiarity floor (issue 33): how far a prompt is from the training kinds, and where an
unfamiliar one goes at cost_quality_tradeoff 0 (api/routing/familiarity.py, flows/default_router/familiarity.py)."""

from __future__ import annotations

import numpy as np
import pytest

from api.routing.default_router import load_default_router
from api.routing.familiarity import Familiarity, read_familiarity, unit_rows
from api.routing.policy import choose
from api.routing.router import Candidate
from flows.default_router.familiarity import LEVELS, MIN_GAIN, NONE, applied, choose_level, spherical_kmeans

MATHS = ["Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many "
         "clips did Natalia sell altogether in April and May?",
         "A bakery makes 120 loaves a day and sells 3/4 of them. How many loaves are left after 5 days?",
         "Tom has 3 times as many apples as Sue. Together they have 64 apples. How many apples does Tom have?"]
CODE = ["def sum_even(numbers):\n    \"\"\"Return the sum of the even numbers in the list.\"\"\"\n",
        "def is_palindrome(text: str) -> bool:\n    \"\"\"Check whether the text reads the same backwards.\"\"\"\n",
        "def fizzbuzz(n):\n    \"\"\"Return a list of the FizzBuzz strings from 1 to n.\"\"\"\n"]
FAR = "Schreibe ein kurzes Gedicht über den Herbst im Schwarzwald, mit Reimen, für meine Großmutter."
CANDIDATES = [Candidate("huggingface", m, 0.2, 0.2) for m in (
    "meta-math/MetaMath-Mistral-7B", "HuggingFaceH4/zephyr-7b-beta", "cognitivecomputations/dolphin-2.6-mistral-7b",
    "cognitivecomputations/dolphin-2.9-llama3-8b", "mistralai/Mistral-7B-Instruct-v0.2")]


@pytest.fixture(scope="module")
def router():
    return load_default_router()


def floor_of(router, kinds: dict[str, list[str]]) -> Familiarity:
    """Prototypes of a few prompts per kind, built as training builds them (centred, unit, k-means)."""
    dim = router.featurizer.embedding.dim
    vectors = {k: router.featurizer.featurize_batch(texts).astype(np.float64) for k, texts in kinds.items()}
    center = np.mean([v[:, :dim].mean(axis=0) for v in vectors.values()], axis=0)
    protos = [spherical_kmeans(unit_rows(v[:, :dim] - center), 2) for v in vectors.values()]
    owner = np.concatenate([[i] * len(p) for i, p in enumerate(protos)])
    return Familiarity(tuple(kinds), center, np.vstack(protos), owner,
                       np.stack([v.mean(axis=0) for v in vectors.values()]).astype(np.float32))


def test_familiarity_is_high_near_a_kind_and_low_far_from_every_kind(router):
    floor = floor_of(router, {"gsm8k": MATHS, "humaneval": CODE})
    near_maths = router.featurizer.featurize("A farmer has 17 cows and buys 8 more. How many cows does he have now?")
    near_code = router.featurizer.featurize("def reverse_words(s):\n    \"\"\"Reverse the order of the words.\"\"\"\n")
    far = router.featurizer.featurize(FAR)
    levels = {name: floor.measure(f.vector) for name, f in
              (("maths", near_maths), ("code", near_code), ("far", far))}
    assert floor.kinds[levels["maths"][1]] == "gsm8k" and floor.kinds[levels["code"][1]] == "humaneval"
    assert levels["far"][0] < min(levels["maths"][0], levels["code"][0])
    batch_level, batch_kind = floor.measure(np.stack([near_maths.vector, far.vector]))
    assert batch_level == pytest.approx([levels["maths"][0], levels["far"][0]])
    assert list(batch_kind) == [levels["maths"][1], levels["far"][1]]


def test_an_unfamiliar_prompt_goes_to_the_best_evidenced_candidate_at_t0_and_a_familiar_one_as_before(router):
    floor = floor_of(router, {"gsm8k": MATHS, "humaneval": CODE})
    familiar = router.featurizer.featurize("A farmer has 17 cows and buys 8 more. How many cows does he have now?")
    far = router.featurizer.featurize(FAR)
    far_level, far_kind = floor.measure(far.vector)
    threshold = (far_level + floor.measure(familiar.vector)[0]) / 2
    guarded = router.with_familiarity(floor.with_threshold(threshold))
    plain = router.with_familiarity(None)
    cost = np.full(len(CANDIDATES), 1e-4)

    # Familiar: routed exactly as without the floor.
    assert guarded.predict_quality(familiar, CANDIDATES) == pytest.approx(plain.predict_quality(familiar, CANDIDATES))
    # Unfamiliar: the candidates' figures on the nearest known kind's typical prompt decide, at t = 0 the best one.
    evidence = plain.predict_quality_batch(floor.kind_vectors[[far_kind]], CANDIDATES)[0]
    quality = guarded.predict_quality(far, CANDIDATES)
    assert quality == pytest.approx(evidence)
    assert choose(quality, cost, cost_quality_tradeoff=0).index == int(np.argmax(evidence))
    # The batch path (the dial's calibration pool) agrees with the per-request one.
    batch = guarded.predict_quality_batch(np.stack([familiar.vector, far.vector]), CANDIDATES)
    assert batch[0] == pytest.approx(plain.predict_quality(familiar, CANDIDATES))
    assert batch[1] == pytest.approx(evidence)


def test_fallback_targets_and_weights(router):
    floor = floor_of(router, {"gsm8k": MATHS, "humaneval": CODE})
    kind_quality = np.array([[0.9, 0.2, 0.5], [0.1, 0.8, 0.5]])
    predicted = np.array([[0.3, 0.4, 0.6], [0.2, 0.1, 0.7]])
    nearest = floor.with_threshold(0.0, target="nearest", weight=1.0)
    assert nearest.fallback(predicted, kind_quality, np.array([1, 0])) == pytest.approx(kind_quality[[1, 0]])
    overall = floor.with_threshold(0.0, target="overall", weight=1.0)
    assert overall.fallback(predicted, kind_quality, np.array([1, 0])) == pytest.approx(np.full((2, 3), 0.5))
    half = floor.with_threshold(0.0, target="nearest", weight=0.5)
    assert half.fallback(predicted, kind_quality, np.array([0, 0])) == pytest.approx(
        0.5 * predicted + 0.5 * kind_quality[[0, 0]])
    with pytest.raises(ValueError):
        floor.with_threshold(0.0, target="anywhere")


def test_no_threshold_routes_exactly_as_without_the_floor_and_the_floor_round_trips(router, tmp_path):
    floor = floor_of(router, {"gsm8k": MATHS, "humaneval": CODE})
    far = router.featurizer.featurize(FAR)
    off = router.with_familiarity(floor)  # threshold None: "none" was learned
    assert off.predict_quality(far, CANDIDATES) == pytest.approx(router.with_familiarity(None)
                                                                 .predict_quality(far, CANDIDATES))
    record = {"level": "nearest@0.05@1.0", "threshold": 0.1}
    floor.with_threshold(0.1, record).write(tmp_path)
    again = read_familiarity(tmp_path)
    assert again.threshold == pytest.approx(0.1) and again.record == record and again.kinds == floor.kinds
    assert np.allclose(again.prototypes, floor.prototypes, atol=1e-6)
    assert read_familiarity(tmp_path / "missing") is None


def test_the_level_is_none_unless_falling_back_pays_on_the_kinds_left_out():
    def scores(objectives: dict[str, float]) -> dict:
        return {level: {"objective": objectives.get(level, 0.2)} for level in LEVELS}

    level = "nearest@0.05@1.0"
    # A gain smaller than MIN_GAIN on average is no reason to fall back.
    small = {"a": scores({NONE: 0.2, level: 0.2 + MIN_GAIN / 2}), "b": scores({NONE: 0.3, level: 0.3})}
    assert choose_level(small) == NONE
    # A gain that holds on the kinds left out is.
    large = {"a": scores({NONE: 0.2, level: 0.26}), "b": scores({NONE: 0.3, level: 0.34})}
    assert choose_level(large) == level
    # A large mean made by one kind alone is not (flows/kinds_left_out.py).
    one_kind = {"a": scores({NONE: 0.2, level: 0.30}), "b": scores({NONE: 0.3, level: 0.29})}
    assert choose_level(one_kind) == NONE
    # A level's threshold is a quantile of the in-distribution familiarity; none has none.
    floor = Familiarity(("a",), np.zeros(2), np.eye(2), np.array([0, 0]), np.zeros((1, 4), np.float32))
    heldout = np.linspace(0.0, 1.0, 101)
    assert applied(floor, heldout, NONE).threshold is None
    chosen = applied(floor, heldout, "overall@0.1@0.5")
    assert chosen.threshold == pytest.approx(0.1) and chosen.target == "overall" and chosen.weight == 0.5


def test_a_retrained_floor_is_the_same_when_it_decides_alike(router, tmp_path):
    from flows.default_router.familiarity import same_floor

    floor = floor_of(router, {"gsm8k": MATHS, "humaneval": CODE})
    folders = {name: tmp_path / name for name in ("a", "b", "c", "d", "e")}
    for folder in folders.values():
        folder.mkdir()
    record = {"level": "nearest@0.05@1.0"}
    floor.with_threshold(0.2, record).write(folders["a"])
    drifted = Familiarity(floor.kinds, floor.center + 1e-5, floor.prototypes, floor.prototype_kind,
                          floor.kind_vectors, 0.2 + 1e-5, record=record)
    drifted.write(folders["b"])
    floor.with_threshold(0.3, record).write(folders["c"])
    moved = Familiarity(floor.kinds, floor.center, floor.prototypes[::-1], floor.prototype_kind, floor.kind_vectors,
                        0.2, record=record)
    moved.write(folders["d"])
    floor.with_threshold(None, {"level": NONE}).write(folders["e"])
    assert same_floor(folders["a"], folders["b"])
    assert not same_floor(folders["a"], folders["c"])  # another threshold
    assert not same_floor(folders["a"], folders["d"])  # other prototypes
    assert not same_floor(folders["a"], folders["e"])  # none against a threshold
    other_none = Familiarity(floor.kinds, floor.center, floor.prototypes[::-1], floor.prototype_kind,
                             floor.kind_vectors, None, record={"level": NONE})
    other_none.write(folders["c"])
    assert same_floor(folders["e"], folders["c"])  # no threshold: prototypes are never read
