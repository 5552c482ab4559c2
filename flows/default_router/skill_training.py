"""Training the default router's skill model and choosing how much of it the router uses.

Data (shippable only, see flows/default_router/multi.py): RouteLLM's MMLU and GSM8K (GPT-4-1106 vs Mixtral) and
RouterDC's MMLU, GSM8K, ARC-Challenge and HumanEval (7 open models), the training folds of each. Each benchmark
counts as one block of equal weight. RouterDC's CMMLU and AlpacaEval are never trained on (their licences forbid a
shipped artefact built on them); they, MT-Bench and the held-out fold measure the router. `leave_out` drops whole
benchmarks (every source's copy), for measuring the router on benchmarks it never saw
(benchmarks/default_router_unseen.py).

The blend between the one-skill IRT scorer and the skill model is chosen on the training split alone: both are fit
on folds 2-4, every candidate blend is scored on fold 1 of every trained benchmark (routing gain, flows/default_router/
report.py), and the best one is kept for the router fit on folds 1-4.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from api.routing.capability import AXES
from api.routing.features import Featurizer
from flows.default_router.data import STRONG, WEAK
from flows.default_router.multi import ROUTERDC_MODELS, Outcomes, routellm, routerdc, split_keys
from flows.default_router.skills import BUDGET, Block, FittedSkills, fit_skills

BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)
TRAINED_BLOCKS = ("routellm/mmlu", "routellm/gsm8k", "routerdc/mmlu", "routerdc/gsm8k", "routerdc/arc",
                  "routerdc/humaneval")
BENCHMARKS = ("mmlu", "gsm8k", "arc", "humaneval")  # what `leave_out` may name
# Canonical "provider/model" of each model in the data, as the catalogue (or a custom model) names it.
CANONICAL = {STRONG: "openai/gpt-4-1106-preview", WEAK: "togetherai/mistralai/Mixtral-8x7B-Instruct-v0.1",
             **{m: f"huggingface/{m}" for m in ROUTERDC_MODELS}}
L2, L2_NEED, L2_CORRECTION, L2_OFFSET = 1e-3, 1e-3, 1.0, 1.0


def trained_blocks(leave_out: tuple[str, ...] = ()) -> tuple[str, ...]:
    unknown = set(leave_out) - set(BENCHMARKS)
    if unknown:
        raise ValueError(f"leave_out names unknown benchmarks {sorted(unknown)}; known: {list(BENCHMARKS)}")
    return tuple(key for key in TRAINED_BLOCKS if key.split("/", 1)[1] not in leave_out)


def outcome_sets(routellm_dir: Path, routerdc_dir: Path | None) -> dict[str, Outcomes]:
    pair = routellm(routellm_dir)
    sets = {o.key: o for o in pair}
    if routerdc_dir is not None and Path(routerdc_dir).exists():
        sets.update({o.key: o for o in routerdc(routerdc_dir, split_keys(pair))})
    return sets


def training_models(sets: dict[str, Outcomes], keys: tuple[str, ...]) -> list[str]:
    found: dict[str, None] = {}
    for key in keys:
        if key in sets:
            found.update({CANONICAL[m]: None for m in sets[key].models})
    return list(found)


def blocks(sets: dict[str, Outcomes], features: dict[str, np.ndarray], models: list[str], folds: set[int],
           keys: tuple[str, ...]) -> list[Block]:
    out = []
    for key in keys:
        if key not in sets:
            continue
        o = sets[key]
        rows = o.in_folds(folds)
        index = np.array([models.index(CANONICAL[m]) for m in o.models])
        out.append(Block(features[key][rows].astype(np.float64), o.scores[rows], index))
    return out


def fit(sets: dict[str, Outcomes], features: dict[str, np.ndarray], models: list[str], figures: np.ndarray,
        folds: set[int], keys: tuple[str, ...]) -> FittedSkills:
    return fit_skills(blocks(sets, features, models, folds, keys), figures, l2=L2, l2_need=L2_NEED,
                      l2_correction=L2_CORRECTION, l2_offset=L2_OFFSET)


def spec(fitted: FittedSkills, models: list[str]) -> dict:
    def r(v):
        return [round(float(x), 7) for x in np.ravel(v)]

    return {"axes": list(AXES), "w_sharpness": r(fitted.w_sharpness), "b_sharpness": round(fitted.b_sharpness, 7),
            "w_difficulty": r(fitted.w_difficulty), "b_difficulty": round(fitted.b_difficulty, 7),
            "w_need": r(fitted.w_need), "b_need": r(fitted.b_need),
            "models": {key: {"skills": r(fitted.corrections[i]), "offset": round(float(fitted.offsets[i]), 7)}
                       for i, key in enumerate(models)},
            "lbfgs_budget": BUDGET}


def featurize_sets(featurizer: Featurizer, sets: dict[str, Outcomes]) -> dict[str, np.ndarray]:
    return {key: featurizer.featurize_batch(o.prompts).astype(np.float32) for key, o in sets.items()}


BLEND_MARGIN = 0.01  # one validation fold is noisy: a larger blend must beat a smaller one by this much


def choose_blend(score_blend: Callable[[float], float]) -> tuple[float, dict[str, float]]:
    """The smallest blend whose validation score is within BLEND_MARGIN of the best, and every blend's score."""
    scores = {str(b): round(score_blend(b), 4) for b in BLENDS}
    top = max(scores.values())
    return min(b for b in BLENDS if scores[str(b)] >= top - BLEND_MARGIN), scores
