"""GSM8K cross-validation of the encoder, free of held-out selection (datasets/default_router/README.md).

    python -m benchmarks.research.crossval [--e5-cache /tmp/e5-cache] [--baseline-table old/static_embedding.npy]

The 1,051 GSM8K training rows are cut into 5 folds (row order). For each fold the e5 table is distilled again
without that fold's prompts (so the fold is as unseen as the held-out rows are to the shipped table), the shipped
gated IRT heads are fitted on every MMLU training row plus the other folds, and the fold's rows are scored. The
pooled out-of-fold scores give one RouteLLM 10-quantile APGR. `--baseline-table` scores another token table (e.g.
the v2 MiniLM one from git history) on the same folds without re-distillation (it never saw the labels).
Held-out rows (sha256 % 5 == 0) and MT-Bench are not touched. About five ridge solves: minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from api.routing.default_router import load_default_router
from api.routing.features import StaticEmbedding, WordPiece, hand_features, numeric_gate
from flows.default_router.data import load_all
from flows.default_router.distill_e5 import (
    DIMS,
    RIDGE_LAMBDA,
    bag_of_tokens,
    e5_vectors,
    pca_basis,
    ridge_token_vectors,
)
from flows.default_router.irt import fit_irt, predict_proba
from flows.default_router.pair_irt import GSM8K_WEIGHT, L2, L2_GATED, pair_capabilities
from flows.evaluation import summarize, threshold_curve

REPO = Path(__file__).resolve().parents[2]
ARTEFACT = REPO / "datasets" / "default_router"


def gated_design(E, H: np.ndarray):
    """[E, H, g*E, g*H] (g = numeric_gate) and the matching L2 penalty vector, as the shipped router is trained."""
    from scipy import sparse

    g = numeric_gate(H)[:, None]
    if sparse.issparse(E):
        X = sparse.hstack([E, H, E.multiply(g), H * g]).tocsr()
    else:
        X = np.hstack([E, H, E * g, H * g])
    dim = X.shape[1] // 2
    return X, np.concatenate([np.full(dim, L2), np.full(dim, L2_GATED)])


def _normalise(a: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(a, axis=1, keepdims=True)
    return np.divide(a, norm, out=np.zeros_like(a), where=norm > 0)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "routellm")
    parser.add_argument("--e5-cache", type=Path, default=None, help="folder caching e5 vectors (build_encoder's)")
    parser.add_argument("--baseline-table", type=Path, default=None, help="another static_embedding.npy to compare")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()

    benchmarks = load_all(args.data)
    mmlu, gsm = benchmarks["mmlu"], benchmarks["gsm8k"]
    prompts = [p for b in (mmlu, gsm) for p, held in zip(b.prompts, b.heldout) if not held]
    strong = np.concatenate([mmlu.strong[~mmlu.heldout], gsm.strong[~gsm.heldout]])
    weak = np.concatenate([mmlu.weak[~mmlu.heldout], gsm.weak[~gsm.heldout]])
    n_mmlu = int((~mmlu.heldout).sum())
    gsm_rows = np.arange(n_mmlu, len(prompts))
    fold = np.arange(len(gsm_rows)) % args.folds
    weights = np.where(np.arange(len(prompts)) >= n_mmlu, GSM8K_WEIGHT, 1.0)
    Y = np.stack([strong, weak], axis=1)
    caps = pair_capabilities(load_default_router().prior)
    tokenizer_json = (ARTEFACT / "tokenizer.json").read_text(encoding="utf-8")
    tokenizer = WordPiece(json.loads(tokenizer_json)["model"]["vocab"])
    H = np.stack([hand_features(p) for p in prompts]).astype(np.float64)
    vectors = e5_vectors(prompts, args.e5_cache).astype(np.float64)  # the same corpus build_encoder embeds
    bags = bag_of_tokens(tokenizer, prompts)
    baseline = None
    if args.baseline_table is not None:
        baseline = StaticEmbedding(np.load(args.baseline_table), tokenizer_json).encode_batch(prompts)

    def fold_scores(E: np.ndarray, fit: np.ndarray, test: np.ndarray) -> np.ndarray:
        X, penalty = gated_design(E, H)
        heads = fit_irt(X[fit], Y[fit], np.ones((len(fit), 2), bool), caps, l2=penalty, weights=weights[fit])
        P = predict_proba(X[test], heads, caps)
        return P[:, 0] - P[:, 1]

    scores = {"e5-distilled (v3)": np.zeros(len(gsm_rows))}
    if baseline is not None:
        scores["baseline table"] = np.zeros(len(gsm_rows))
    for f in range(args.folds):
        test = gsm_rows[fold == f]
        fit = np.setdiff1d(np.arange(len(prompts)), test)
        target = vectors[fit] @ pca_basis(vectors[fit], DIMS)
        table = ridge_token_vectors(bags[fit], target, RIDGE_LAMBDA)
        scores["e5-distilled (v3)"][fold == f] = fold_scores(_normalise(np.asarray(bags @ table)), fit, test)
        if baseline is not None:
            scores["baseline table"][fold == f] = fold_scores(baseline, fit, test)
        print(f"fold {f + 1}/{args.folds} done", flush=True)
    s, w = strong[gsm_rows], weak[gsm_rows]
    for label, sc in scores.items():
        apgr = summarize(threshold_curve(sc, s, w), w.mean(), s.mean()).apgr
        print(f"{label}: {args.folds}-fold GSM8K APGR (10 quantiles) {apgr:.3f} over {len(gsm_rows)} training rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
