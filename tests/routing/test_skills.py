"""Per-domain skills: where a model's skill vector comes from (figures, family, imputation, the uncertain prior), that
the skill model learns which queries need which skill, that the shipped router sends specialists their queries, and
that the training split and leave-one-benchmark-out hold."""

from __future__ import annotations

import numpy as np
import pytest

from api.routing import model_names
from api.routing.capability import AXES, UNCERTAINTY_Z, CapabilityPrior, FallbackLine, FigureRow, to_capability
from api.routing.default_router import load_default_router
from api.routing.router import Candidate
from api.routing.skills import SkillModel
from flows.default_router.figures import fit_imputation
from flows.default_router.multi import Outcomes, question_key, routerdc, split_keys
from flows.default_router.skill_training import spec, trained_blocks
from flows.default_router.skills import Block, fit_skills

URL = "https://example.org/figures"
FIGURES = [
    FigureRow("acme", "generalist-1", "MMLU", 80.0, URL),
    FigureRow("acme", "generalist-1", "GSM8K", 70.0, URL),
    FigureRow("acme", "generalist-1", "HumanEval", 60.0, URL),
    FigureRow("acme", "mathy-2024-01-01", "MMLU", 60.0, URL),
    FigureRow("acme", "mathy-2024-01-01", "GSM8K", 90.0, URL),
    FigureRow("acme", "knowledge-only", "MMLU", 70.0, URL),
    FigureRow("acme", "other", "MMLU", 75.0, URL),
    FigureRow("acme", "other", "MGSM", 65.0, URL),  # maths from MGSM when there is no GSM8K figure
    FigureRow("acme", "other", "HumanEval", 50.0, URL),
]
PRICE_LINE = FallbackLine(intercept=-2.0, per_log_output_price=0.5, per_log_context=0.0, lower=-3.0, upper=1.0)


@pytest.fixture(scope="module")
def prior() -> CapabilityPrior:
    return CapabilityPrior(FIGURES, PRICE_LINE, {"maths": (0.5, 1.0), "code": (-1.0, 1.0)})


def test_a_skill_profile_comes_from_figures_then_family_then_lines(prior):
    exact, how = prior.skills("acme", "generalist-1", 1.0, None)
    assert how == "prior" and exact == pytest.approx([to_capability(80), to_capability(70), to_capability(60)])
    family, how = prior.skills("acme", "mathy-2025-06-30", 1.0, None)  # an unseen snapshot of a scored model
    assert how == "family" and family[1] == pytest.approx(
        to_capability(90) - UNCERTAINTY_Z * prior.level_sd[model_names.SNAPSHOT])
    other, _ = prior.skills("acme", "other", 1.0, None)
    assert other[1] == pytest.approx(to_capability(65))
    # MMLU only: maths and code from the knowledge lines
    imputed, how = prior.skills("acme", "knowledge-only", 1.0, None)
    k = to_capability(70)
    sd = prior.imputation_sd  # each line's residual on the figures, given up as on a borrowed figure
    assert how == "prior" and imputed == pytest.approx(
        [k, 0.5 + k - UNCERTAINTY_Z * sd["maths"], -1.0 + k - UNCERTAINTY_Z * sd["code"]])
    # nobody scored it: the uncertain prior on every axis, whatever the price (api/routing/capability.py)
    unknown, how = prior.skills("elsewhere", "brand-new", float(np.e ** 2), 8192)
    assert how == "uncertain" and unknown == pytest.approx(prior.uncertain)
    dear, _ = prior.skills("elsewhere", "brand-new-pro", 1e9, 8192)
    assert dear == pytest.approx(unknown)


def test_imputation_lines_are_fitted_on_models_with_both_figures():
    lines = fit_imputation(FIGURES)
    assert set(lines) == set(AXES[1:])
    # maths: three models have both (generalist, mathy, other via MGSM); a line through them
    intercept, slope = lines["maths"]
    points = [(to_capability(80), to_capability(70)), (to_capability(60), to_capability(90)),
              (to_capability(75), to_capability(65))]
    expected_slope, expected_intercept = np.polyfit(*zip(*points), 1)
    assert slope == pytest.approx(expected_slope, abs=1e-5) and intercept == pytest.approx(expected_intercept, abs=1e-5)


def synthetic_blocks(rng: np.random.Generator) -> tuple[list[Block], np.ndarray]:
    """Two kinds of query (a maths flag and a code flag in the features) and three models: a maths specialist, a
    code specialist and a generalist that is best on average. Outcomes follow that, with noise."""
    n = 600
    kind = rng.integers(0, 2, size=n)  # 0 maths, 1 code
    X = np.stack([kind == 0, kind == 1, rng.normal(size=n) * 0.1], axis=1).astype(float)
    p = np.where(kind[:, None] == 0, [0.85, 0.30, 0.65], [0.30, 0.85, 0.65])
    Y = (rng.random((n, 3)) < p).astype(float)
    # public figures (knowledge, maths, code) on the capability scale
    figures = np.array([[-1.0, 0.5, -2.0], [-1.0, -2.0, 0.5], [0.0, -0.5, -0.5]])
    half = n // 2
    return [Block(X[:half], Y[:half], np.array([0, 1, 2])), Block(X[half:], Y[half:], np.array([0, 1, 2]))], figures


def test_the_skill_model_learns_which_queries_need_which_skill():
    blocks, figures = synthetic_blocks(np.random.default_rng(0))
    fitted = fit_skills(blocks, figures)
    model = SkillModel(spec(fitted, ["a/maths", "a/code", "a/general"]), dim=3)
    skills, offsets = model.candidate_skills(["a/maths", "a/code", "a/general"], figures)
    maths, code = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])
    assert model.predict(maths, skills, offsets).argmax() == 0
    assert model.predict(code, skills, offsets).argmax() == 1
    # a model never trained on, known only by its figures: strong at code, so it beats the generalist on code
    newcomer = np.array([[-1.0, -2.0, 1.0]])
    s2, o2 = model.candidate_skills(["b/newcomer"], newcomer)
    both = model.predict(code, np.vstack([skills[2:], s2]), np.concatenate([offsets[2:], o2]))
    assert both[1] > both[0]
    assert fit_skills(blocks, figures).w_need == pytest.approx(fitted.w_need, abs=1e-6)  # deterministic


ROUTERDC = ["mistralai/Mistral-7B-v0.1", "meta-math/MetaMath-Mistral-7B", "itpossible/Chinese-Mistral-7B-v0.1",
            "HuggingFaceH4/zephyr-7b-beta", "cognitivecomputations/dolphin-2.6-mistral-7b",
            "meta-llama/Meta-Llama-3-8B", "cognitivecomputations/dolphin-2.9-llama3-8b"]


def test_the_shipped_router_sends_specialists_their_queries():
    router = load_default_router()
    candidates = [Candidate("huggingface", m, 0.2, 0.2, 32768) for m in ROUTERDC]

    def best(prompt: str) -> str:
        return ROUTERDC[int(router.predict_quality(router.featurizer.featurize(prompt), candidates).argmax())]

    assert best("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
                "How many clips did Natalia sell altogether in April and May?") == "meta-math/MetaMath-Mistral-7B"
    assert best('def sum_even(nums):\n    """Return the sum of the even numbers in nums.\n    >>> sum_even([1, 2, 3])'
                '\n    2\n    """\n').startswith("cognitivecomputations/dolphin")
    assert best("Which of the following is the primary function of the mitochondria?\nA. Protein synthesis\n"
                "B. Energy production\nC. Lipid storage\nD. Cell division\nAnswer:") == "HuggingFaceH4/zephyr-7b-beta"


def test_a_question_two_sources_share_keeps_one_side_of_the_split(tmp_path):
    import json

    pair = Outcomes("routellm", "mmlu", ["What is 2+2?\nA. 3\nB. 4\nAnswer:"], ("s", "w"), np.ones((1, 2)),
                    np.array([0]))
    rows = [{"question": "What is  2+2?\nA. 3\nB. 4", "scores": {m: 1 for m in ROUTERDC}},
            {"question": "Something else entirely", "scores": {m: 0 for m in ROUTERDC}}]
    for file in ("mmlu_train.json", "gsm8k-train.json", "cmmlu_train.json", "arc_challenge_train.json",
                 "humaneval_train.json"):
        (tmp_path / file).write_text(json.dumps(rows))
    mmlu = next(o for o in routerdc(tmp_path, split_keys([pair])) if o.name == "mmlu")
    assert question_key(rows[0]["question"]) == question_key(pair.prompts[0])
    assert mmlu.folds[0] == 0 and mmlu.heldout[0]  # held out with its RouteLLM copy, whatever its own hash says


def test_leave_out_drops_every_copy_of_a_benchmark_and_refuses_unknown_names():
    assert "routerdc/mmlu" not in trained_blocks(("mmlu",)) and "routellm/mmlu" not in trained_blocks(("mmlu",))
    assert "routerdc/arc" in trained_blocks(("mmlu",))
    with pytest.raises(ValueError, match="unknown benchmarks"):
        trained_blocks(("cmmlu",))
