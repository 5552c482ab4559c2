"""The committed default-router artefact: loads fast, refuses a stale feature version, ranks unseen models."""

import json
import shutil

import numpy as np
import pytest

from api.routing.default_router import DEFAULT_ARTEFACT_DIR, DEFAULT_PRIOR_PATH, load_default_router
from api.routing.features import FEATURE_VERSION, FeatureVersionMismatch
from api.routing.router import Candidate, Router
from flows.default_router.multi import ROUTERDC_MODELS

GPT4 = Candidate("openai", "gpt-4-1106-preview", 10.0, 30.0, 128000)
MIXTRAL = Candidate("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1", 0.6, 0.6, 32768)


@pytest.fixture(scope="module")
def router():
    return load_default_router()


def test_loads_and_is_a_router():  # how fast: benchmarks/startup_costs.py
    r = load_default_router()
    assert isinstance(r, Router)
    assert r.spec["feature_version"] == FEATURE_VERSION
    assert len(r.schedule) == 11 and r.schedule[0] == 0.0 and r.schedule[-1] == float("inf")
    assert list(r.schedule) == sorted(r.schedule)


def test_refuses_a_feature_version_mismatch(tmp_path):
    folder = tmp_path / "artefact"
    shutil.copytree(DEFAULT_ARTEFACT_DIR, folder)
    spec = json.loads((folder / "router.json").read_text())
    spec["feature_version"] = "some-older-version"
    (folder / "router.json").write_text(json.dumps(spec))
    with pytest.raises(FeatureVersionMismatch):
        load_default_router(folder)
    # an encoder built for other features is refused too
    spec["feature_version"] = FEATURE_VERSION
    (folder / "router.json").write_text(json.dumps(spec))
    enc = json.loads((folder / "encoder.json").read_text())
    enc["feature_version"] = "v0"
    (folder / "encoder.json").write_text(json.dumps(enc))
    with pytest.raises(FeatureVersionMismatch):
        load_default_router(folder)


def test_quality_is_a_probability_and_prefers_the_stronger_model(router):
    f = router.featurizer.featurize("Prove that the square root of 2 is irrational.")
    q = router.predict_quality(f, [GPT4, MIXTRAL])
    assert q.shape == (2,) and np.all((q > 0) & (q < 1))
    assert q[0] > q[1]


def test_unseen_models_get_scores_from_prior_family_placement_or_the_uncertain_prior(router):
    cands = [
        Candidate("openai", "gpt-4o", 2.5, 10.0, 128000),  # prior row
        Candidate("openai", "gpt-4o-2099-01-01", 2.5, 10.0, 128000),  # family (date stripped)
        Candidate("anthropic", "claude-opus-4-99", 5.0, 25.0, 1_000_000),  # nobody scored it: placed by its tier
        Candidate("custom", "my-tiny-model", 0.01, 0.01, 4096),  # custom model without figures or family
        Candidate("custom", "my-huge-model", 60.0, 240.0, 2_000_000),  # nor this one
    ]
    sources = [e["source"] for e in router.explain(cands)]
    assert sources == ["prior", "family", "tier", "uncertain", "uncertain"]
    f = router.featurizer.featurize("Write a Python function that merges two sorted linked lists.")
    q = router.predict_quality(f, cands)
    assert np.all(np.isfinite(q)) and np.all((q > 0) & (q < 1))
    # no figures and no family: the same uncertain prior whatever the price or context, below a model with strong
    # figures; a new opus reads its family's opus figures (api/routing/placement.py), above the unknown
    assert q[3] == pytest.approx(q[4]) and q[0] > q[3] and q[2] > q[3]
    assert q[0] == pytest.approx(q[1], abs=0.05)


def test_ranks_follow_the_prior_on_a_hard_query(router):
    f = router.featurizer.featurize(
        "A train leaves at 3pm going 60 mph; another leaves at 4pm at 80 mph from the same station. "
        "When does the second catch up, and how far from the station? Show each step."
    )
    ladder = [
        Candidate("openai", "o3", 2.0, 8.0, 200000),
        Candidate("openai", "gpt-4o", 2.5, 10.0, 128000),
        Candidate("openai", "gpt-4o-mini", 0.15, 0.6, 128000),
        Candidate("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1", 0.6, 0.6, 32768),
        Candidate("openai", "gpt-3.5-turbo", 0.5, 1.5, 16385),
    ]
    q = router.predict_quality(f, ladder)
    assert list(np.argsort(-q)) == [0, 1, 2, 3, 4]


def test_models_it_never_trained_on_are_compared_on_the_skills_the_query_needs(tmp_path):
    # Two custom models with the same knowledge figure: the one with the maths figures wins a maths word problem,
    # in both halves of the router (the pair IRT reads u(q) . s for a model it has no outcomes for).
    figures = tmp_path / "figures.csv"
    rows = ["provider,model,benchmark,score,protocol,source_url,source_note"]
    rows += [f"acme,mathy,{b},{s},test,https://example.invalid,test" for b, s in
             (("MMLU", 80), ("GSM8K", 95), ("HumanEval", 60))]
    rows += [f"acme,wordy,{b},{s},test,https://example.invalid,test" for b, s in
             (("MMLU", 80), ("GSM8K", 60), ("HumanEval", 60))]
    figures.write_text("\n".join(rows) + "\n")
    router = load_default_router(prior_path=figures)
    cands = [Candidate("acme", "mathy", 1.0, 1.0, 32768), Candidate("acme", "wordy", 1.0, 1.0, 32768)]
    prompt = ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
              "How many clips did Natalia sell altogether in April and May?")
    f = router.featurizer.featurize(prompt)
    q = router.predict_quality(f, cands)
    assert q[0] > q[1]
    blend, router.blend = router.blend, 0.0  # the pair IRT alone
    try:
        assert router.predict_quality(f, cands)[0] > router.predict_quality(f, cands)[1]
    finally:
        router.blend = blend
    # one query or a batch: the same figures
    batch = router.predict_quality_batch(router.featurizer.featurize_batch([prompt, "What is the capital of Peru?"]),
                                         cands)
    assert batch[0] == pytest.approx(q)
    # a model the router trained on keeps its own scoring whatever joins the candidate set
    both = router.predict_quality(f, [GPT4, MIXTRAL] + cands)
    assert both[:2] == pytest.approx(router.predict_quality(f, [GPT4, MIXTRAL]))


def test_without_maths_evidence_a_word_problem_goes_to_the_candidate_best_known_overall(tmp_path):
    # RouterDC's seven open models (trained on) with their GSM8K figures removed, as in a retrain that leaves GSM8K
    # out: every maths figure is imputed from knowledge, so knowledge alone would send a word problem to the
    # knowledge leader; on a word problem the router reads each at its best-evidenced standing (the mean
    # of knowledge and code here), in both scorers.
    lines = DEFAULT_PRIOR_PATH.read_text(encoding="utf-8").splitlines()
    masked = tmp_path / "figures.csv"
    masked.write_text("\n".join(line for line in lines
                                if not (",GSM8K," in line and "shuhao02/RouterDC" in line)) + "\n")
    cands = [Candidate("huggingface", m, 1.0, 1.0, 32768) for m in ROUTERDC_MODELS]
    prompt = ("A baker made 120 rolls on Monday and 85 on Tuesday. She sold 3 trays of 24 rolls and gave 15 rolls "
              "away. How many rolls does she have left?")
    shipped_router, router = load_default_router(), load_default_router(prior_path=masked)
    f = router.featurizer.featurize(prompt)
    assert router.featurizer.word_problem(f.vector) == pytest.approx(1.0)
    # numbers in a function's examples make a code prompt, not a word problem
    code = router.featurizer.featurize('def add(a, b):\n    """add(1, 2) == 3, add(4, 5) == 9, add(0, 7) == 7"""\n')
    assert router.featurizer.gate(code.vector) > 0.0 and router.featurizer.word_problem(code.vector) == 0.0
    names = [c.model for c in cands]
    knowledge = router.capabilities(cands)
    # the knowledge leader (zephyr by RouterDC's MMLU; Llama-3-8B once its MMLU-Pro figure maps above it) is not
    # the best known overall
    leader = names[int(np.argmax(knowledge))]
    assert leader != "cognitivecomputations/dolphin-2.9-llama3-8b"
    q = router.predict_quality(f, cands)
    assert names[int(np.argmax(q))] == "cognitivecomputations/dolphin-2.9-llama3-8b"
    assert router.predict_quality_batch(f.vector[None, :], cands)[0] == pytest.approx(q)
    # the pair IRT alone: the word problem reads the standing, an exam question (gate closed) still knowledge
    exam = router.featurizer.featurize("Which gas makes up most of Earth's atmosphere?\nA. Oxygen\nB. Nitrogen\n"
                                       "C. Argon\nD. Carbon dioxide\nAnswer:")
    assert router.featurizer.gate(exam.vector) == 0.0
    blend, router.blend = router.blend, 0.0
    try:
        assert names[int(np.argmax(router.predict_quality(f, cands)))] == "cognitivecomputations/dolphin-2.9-llama3-8b"
        assert names[int(np.argmax(router.predict_quality(exam, cands)))] == leader
    finally:
        router.blend = blend
    # with their own maths figures (the shipped file) the standings are never consulted
    assert shipped_router._skill_inputs(cands)[4] is None and router._skill_inputs(cands)[4][1].all()
