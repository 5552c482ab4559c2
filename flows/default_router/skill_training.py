"""Training the default router's skill model and choosing how much of it the router uses.

Data (shippable only, see flows/default_router/multi.py and shared_sets.py): RouteLLM's MMLU and GSM8K (GPT-4-1106
vs Mixtral), RouterDC's MMLU, GSM8K, ARC-Challenge and HumanEval (7 open models), MMLU-Pro's non-MMLU questions (29
models) and ZeroEval's CRUX (49) and MATH level 5 (41), the training folds of each, about 110 models in all. Each
benchmark counts as one block of equal weight; a block trains on at most MAX_CELLS outcomes' worth of its training
rows (a fixed spread by a hash of the prompt), which bounds the training time. RouterDC's CMMLU and AlpacaEval are never trained on (their licences forbid a
shipped artefact built on them); they, MT-Bench and the held-out fold measure the router. `leave_out` drops whole
benchmarks (every source's copy), for measuring the router on benchmarks it never saw
(benchmarks/default_router_unseen.py); `leave_out_models` drops models' outcomes (by key) from every block, for
measuring it on models it never saw.

The blend between the one-skill IRT scorer and the skill model is chosen on the training split alone: both are fit
on folds 2-4, every candidate blend is scored on fold 1 of every trained benchmark (routing gain, flows/default_router/
report.py), and the best one is kept for the router fit on folds 1-4.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from api.routing.capability import AXES
from api.routing.features import Featurizer
from flows.default_router.data import STRONG, WEAK
from flows.default_router.multi import Outcomes, routellm, routerdc, split_keys
from flows.default_router.shared_sets import model_key, shared_sets
from flows.default_router.skills import BUDGET, Block, FittedSkills, fit_skills

BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)
TRAINED_BLOCKS = ("routellm/mmlu", "routellm/gsm8k", "routerdc/mmlu", "routerdc/gsm8k", "routerdc/arc",
                  "routerdc/humaneval", "mmlu_pro/mmlu_pro", "zeroeval/crux", "zeroeval/math_l5")
BENCHMARKS = ("mmlu", "gsm8k", "arc", "humaneval", "mmlu_pro", "crux", "math_l5")  # what `leave_out` may name
PAIR_KEYS = (model_key(STRONG), model_key(WEAK))  # the one-skill scorer trains on them: they cannot be left out
MAX_CELLS = 8_000  # outcomes per block and fit: 4,000 rows of the pair, 275 of MMLU-Pro (29 models)
LOBO_CELLS = 4_000  # half as many in the fits that leave a benchmark out for the floor (7 of the 9 fits)
L2, L2_NEED, L2_CORRECTION, L2_OFFSET = 1e-3, 1e-3, 1.0, 1.0


def trained_blocks(leave_out: tuple[str, ...] = ()) -> tuple[str, ...]:
    unknown = set(leave_out) - set(BENCHMARKS)
    if unknown:
        raise ValueError(f"leave_out names unknown benchmarks {sorted(unknown)}; known: {list(BENCHMARKS)}")
    return tuple(key for key in TRAINED_BLOCKS if key.split("/", 1)[1] not in leave_out)


def checked_models(leave_out_models: tuple[str, ...]) -> tuple[str, ...]:
    keys = tuple(model_key(m) for m in leave_out_models)
    if set(keys) & set(PAIR_KEYS):
        raise ValueError(f"leave_out_models cannot name {list(PAIR_KEYS)}: the one-skill scorer is trained on them")
    return keys


def outcome_sets(routellm_dir: Path, routerdc_dir: Path | None, shared_dir: Path | None = None) -> dict[str, Outcomes]:
    """Every set found: RouteLLM's, RouterDC's (routerdc_dir) and MMLU-Pro / ZeroEval's (under shared_dir, default the
    folder holding routellm_dir)."""
    pair = routellm(routellm_dir)
    sets = {o.key: o for o in pair}
    if routerdc_dir is not None and Path(routerdc_dir).exists():
        sets.update({o.key: o for o in routerdc(routerdc_dir, split_keys(pair))})
    sets.update({o.key: o for o in shared_sets(Path(shared_dir) if shared_dir else Path(routellm_dir).parent)})
    return sets


def without_models(sets: dict[str, Outcomes], dropped: tuple[str, ...]) -> dict[str, Outcomes]:
    """The sets without the outcomes of `dropped` models (a set left with none is dropped)."""
    out = {}
    for key, o in sets.items():
        keep = [j for j, m in enumerate(o.models) if model_key(m) not in dropped]
        if len(keep) == len(o.models):
            out[key] = o
        elif keep:
            out[key] = Outcomes(o.source, o.name, o.prompts, tuple(o.models[j] for j in keep), o.scores[:, keep],
                                o.folds)
    return out


def training_models(sets: dict[str, Outcomes], keys: tuple[str, ...]) -> list[str]:
    found: dict[str, None] = {}
    for key in keys:
        if key in sets:
            found.update({model_key(m): None for m in sets[key].models})
    return list(found)


def capped(o: Outcomes, rows: np.ndarray, limit: int | None = None) -> np.ndarray:
    """At most `limit` of the rows marked (default MAX_CELLS outcomes' worth): those whose prompt hashes lowest (bytes 8-16 of sha256, independent of
    the fold, which bytes 0-8 decide), a fixed spread over the block whatever the file's order."""
    limit = MAX_CELLS // len(o.models) if limit is None else limit
    idx = np.flatnonzero(rows)
    if len(idx) <= limit:
        return rows
    order = sorted(idx, key=lambda i: hashlib.sha256(o.prompts[i].encode("utf-8")).digest()[8:16])
    out = np.zeros_like(rows)
    out[order[:limit]] = True
    return out


def blocks(sets: dict[str, Outcomes], features: dict[str, np.ndarray], models: list[str], folds: set[int],
           keys: tuple[str, ...], cells: int = MAX_CELLS) -> list[Block]:
    out = []
    for key in keys:
        if key not in sets:
            continue
        o = sets[key]
        rows = capped(o, o.in_folds(folds), cells // len(o.models))
        columns = [j for j, m in enumerate(o.models) if model_key(m) in models]
        if not columns:
            continue
        index = np.array([models.index(model_key(o.models[j])) for j in columns])
        out.append(Block(features[key][rows].astype(np.float64), o.scores[np.ix_(rows, columns)], index))
    return out


def fit(sets: dict[str, Outcomes], features: dict[str, np.ndarray], models: list[str], figures: np.ndarray,
        folds: set[int], keys: tuple[str, ...], cells: int = MAX_CELLS) -> FittedSkills:
    return fit_skills(blocks(sets, features, models, folds, keys, cells), figures, l2=L2, l2_need=L2_NEED,
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
