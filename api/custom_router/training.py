"""Fitting a custom router from a validated dataset (training-time only: numpy, scipy, xgboost).

Steps (each a task of the `train-custom-router` flow, see flows/train_custom_router.py):
1. targets: scores -> quality in 0..1 (`normalise_scores`): flipped when lower is better, then rescaled with the
   table's own min and max (one scale for all models, so models stay comparable); 0/1 data is unchanged;
2. folds: K folds by a hash of the prompt (stable under re-ordering);
3. base predictors per model, each with out-of-fold predictions: linear (soft-label logistic regression, all models
   in one L-BFGS problem; one head per view of the encoder, mixed by out-of-fold routing gain), XGBoost
   (`reg:logistic` on the 0..1 quality, one booster per fold, averaged when serving), kNN (similarity-weighted
   mean over the 30 nearest training prompts of the other folds);
4. blend and calibration: the three out-of-fold probabilities are averaged with the weights (from a small grid)
   whose predicted differences between models best track the observed ones (routing is about differences), and
   each model's blend is Platt-scaled to the observed quality, so q_m is calibrated on the score scale;
5. evaluation and the trade-off schedule on the out-of-fold predictions (api.custom_router.calibration).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from api.custom_router.model import knn_scores, logit, sigmoid


@dataclass(frozen=True)
class TrainConfig:
    folds: int = 3
    l2_c: float = 0.3  # inverse L2 strength of the linear heads, as scikit-learn's C
    knn_k: int = 30
    knn_temperature: float = 10.0
    xgb_rounds: int = 60
    xgb_depth: int = 3
    xgb_eta: float = 0.15
    xgb_colsample: float = 0.3
    nthread: int = 2
    seed: int = 0


SMALL_UPLOAD_ROWS = 3000  # up to this many rows, 5 folds (more data per fold model); above it, 3 (time budget)
LINEAR_PREFERENCE = 0.01  # a blend must beat the linear head's agreement by this much to be chosen


def config_for(rows: int) -> TrainConfig:
    return TrainConfig(folds=5 if rows <= SMALL_UPLOAD_ROWS else 3)


def normalise_scores(scores: np.ndarray, maximize: bool) -> tuple[np.ndarray, dict]:
    """(n, M) raw scores -> quality in 0..1, higher is better, and the scale used (kept in the artefact)."""
    y = np.asarray(scores, dtype=np.float64)
    lo, hi = float(np.min(y)), float(np.max(y))
    if 0.0 <= lo and hi <= 1.0:
        q = y if maximize else 1.0 - y
        return q, {"kind": "unit", "maximize": maximize, "min": 0.0, "max": 1.0}
    span = hi - lo if hi > lo else 1.0
    q = (y - lo) / span
    return (q if maximize else 1.0 - q), {"kind": "minmax", "maximize": maximize, "min": lo, "max": hi}


def fold_ids(prompts: list[str], folds: int) -> np.ndarray:
    """Fold of each row from a hash of its prompt; the same prompt always lands in the same fold."""
    ids = np.array([int.from_bytes(hashlib.sha256(p.encode("utf-8", "surrogatepass")).digest()[:8], "big") % folds
                    for p in prompts])
    if len(np.unique(ids)) < folds:  # tiny or degenerate data: fall back to round-robin
        ids = np.arange(len(prompts)) % folds
    return ids


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float, intercept_penalty: bool = False,
                 start: np.ndarray | None = None) -> np.ndarray:
    """Soft-label logistic regression, one column of `y` per output, solved jointly: (d + 1, M) weights."""
    from scipy.optimize import minimize

    xa = np.hstack([x, np.ones((len(x), 1))]).astype(np.float64)
    y = np.asarray(y, dtype=np.float64).reshape(len(x), -1)
    d, m = xa.shape[1], y.shape[1]
    penalty = np.ones((d, 1))
    if not intercept_penalty:
        penalty[-1] = 0.0

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w = flat.reshape(d, m)
        z = xa @ w
        value = float(np.sum(np.logaddexp(0.0, z) - y * z) + np.sum(penalty * w * w) / (2 * c))
        grad = xa.T @ (sigmoid(z) - y) + penalty * w / c
        return value, grad.ravel()

    if start is None:
        start = np.zeros((d, m))
        start[-1] = logit(np.clip(y.mean(axis=0), 0.01, 0.99))
    # ftol 1e-7: the ranking stops changing long before L-BFGS's default tolerance (measured: same APGR, ~half
    # the iterations).
    res = minimize(loss, start.ravel(), jac=True, method="L-BFGS-B", options={"maxiter": 200, "ftol": 1e-7})
    return res.x.reshape(d, m)


def predict_logistic(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return sigmoid(np.hstack([x, np.ones((len(x), 1))]) @ w)


def linear_oof(x: np.ndarray, y: np.ndarray, folds: np.ndarray, cfg: TrainConfig) -> tuple[np.ndarray, np.ndarray]:
    """(out-of-fold predictions, weights fitted on all rows)."""
    oof = np.zeros_like(y)
    fold_weights = []
    for k in range(cfg.folds):
        test = folds == k
        fold_weights.append(fit_logistic(x[~test], y[~test], cfg.l2_c))
        oof[test] = predict_logistic(x[test], fold_weights[-1])
    # The fit on all rows starts from the folds' mean solution: a few iterations instead of a cold start.
    return oof, fit_logistic(x, y, cfg.l2_c, start=np.mean(fold_weights, axis=0))


VIEW_MIX = (0.0, 0.25, 0.5, 0.75, 1.0)  # weight of the second view's logit when an encoder has two


def linear_views_oof(x: np.ndarray, y: np.ndarray, folds: np.ndarray, views, cfg: TrainConfig,
                     log=print) -> tuple[np.ndarray, np.ndarray, dict]:
    """One linear head per view of the encoder (columns, own L2 C); with two views their logits are mixed,
    z = (1 - a) z_1 + a z_2, with the `a` whose out-of-fold predictions route best (`routing_gain`). A mix of
    linear heads is itself linear, so the result is one (d + 1, M) matrix over the whole vector
    and serving stays one matrix-vector product. Returns (out-of-fold probabilities, weights, what was chosen)."""
    from dataclasses import replace

    heads = [(cols, *linear_oof(x[:, cols], y, folds, replace(cfg, l2_c=c))) for _, cols, c in views]
    mixes = [(1.0,)] if len(heads) == 1 else [(1.0 - a, a) for a in VIEW_MIX]
    gain = {m: routing_gain(sum(w * logit(oof) for w, (_, oof, _) in zip(m, heads)), y) for m in mixes}
    best = max(mixes, key=gain.get)
    weights = np.zeros((x.shape[1] + 1, y.shape[1]))
    for w, (cols, _, head) in zip(best, heads):
        weights[cols] += w * head[:-1]
        weights[-1] += w * head[-1]
    oof = heads[0][1] if len(heads) == 1 else sigmoid(sum(w * logit(o) for w, (_, o, _) in zip(best, heads)))
    info = {"views": [v[0] for v in views], "mix": [float(w) for w in best],
            "routing_gain": {",".join(f"{w:.2f}" for w in m): round(v, 4) for m, v in gain.items()}}
    if len(heads) > 1:
        log(f"linear views {info['views']}: mix {info['mix']} "
            f"(out-of-fold routing gain by mix: {info['routing_gain']})")
    return oof, weights, info


def knn_oof(emb: np.ndarray, y: np.ndarray, folds: np.ndarray, cfg: TrainConfig, chunk: int = 2048) -> np.ndarray:
    """kNN predictions for each row from the rows of the other folds (never itself)."""
    oof = np.zeros_like(y)
    for k in range(cfg.folds):
        test, train = np.flatnonzero(folds == k), np.flatnonzero(folds != k)
        for start in range(0, len(test), chunk):
            rows = test[start:start + chunk]
            sims = emb[rows] @ emb[train].T
            oof[rows] = knn_scores(sims, y[train], cfg.knn_k, cfg.knn_temperature)
    return oof


def xgb_oof(x: np.ndarray, y: np.ndarray, folds: np.ndarray, cfg: TrainConfig, out_dir: Path,
            log=print) -> np.ndarray:
    """One XGBoost booster per (model, fold), saved as XGBoost JSON; out-of-fold predictions."""
    import xgboost as xgb

    params = {"objective": "reg:logistic", "max_depth": cfg.xgb_depth, "eta": cfg.xgb_eta, "subsample": 0.8,
              "colsample_bytree": cfg.xgb_colsample, "min_child_weight": 10, "max_bin": 32,
              "tree_method": "hist", "nthread": cfg.nthread, "seed": cfg.seed}
    out_dir.mkdir(parents=True, exist_ok=True)
    oof = np.zeros_like(y)
    for k in range(cfg.folds):
        test = folds == k
        train_x = xgb.QuantileDMatrix(x[~test], max_bin=32)
        test_x = xgb.DMatrix(x[test])
        for m in range(y.shape[1]):
            train_x.set_label(y[~test, m])
            booster = xgb.train(params, train_x, num_boost_round=cfg.xgb_rounds)
            oof[test, m] = booster.predict(test_x)
            booster.save_model(str(out_dir / f"m{m}_f{k}.json"))
        log(f"xgboost fold {k + 1}/{cfg.folds}: {y.shape[1]} models")
    return oof


BLENDS = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (.5, .5, 0), (.5, 0, .5), (0, .5, .5), (1 / 3, 1 / 3, 1 / 3),
          (.6, .2, .2), (.2, .6, .2), (.2, .2, .6)]


def _ranks(v: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(v)


def pairwise_agreement(z: np.ndarray, y: np.ndarray) -> float:
    """How well predicted differences between models track observed ones: the rank correlation of (z_a - z_b) with
    (y_a - y_b) on rows where the two models' scores differ, averaged over model pairs. Routing is about these
    differences, so blends are compared on it rather than on per-model log-loss."""
    total, pairs = 0.0, 0
    for a in range(y.shape[1]):
        for b in range(a + 1, y.shape[1]):
            d = y[:, a] - y[:, b]
            keep = np.abs(d) > 1e-9
            if keep.sum() < 3:
                continue
            p = z[keep, a] - z[keep, b]
            if np.std(p) < 1e-12:
                pairs += 1
                continue
            total += float(np.corrcoef(_ranks(p), _ranks(d[keep]))[0, 1])  # Spearman: routing ranks prompts
            pairs += 1
    return total / pairs if pairs else 0.0


def routing_gain(z: np.ndarray, y: np.ndarray) -> float:
    """How much of the possible gain routing by the predicted differences recovers, averaged over model pairs:
    for a pair (a, b), rows are sent to a in order of predicted z_a - z_b, and the area under the cumulative
    observed gain sum(y_a - y_b) is placed between random order (0) and the oracle's order (1). For two models
    this is APGR up to an affine map; unlike a rank correlation on the rows where the models differ, it also
    charges a predictor for ranking ties (rows where either model would do) ahead of real wins."""
    total, pairs = 0.0, 0
    for a in range(y.shape[1]):
        for b in range(a + 1, y.shape[1]):
            d = y[:, a] - y[:, b]
            area = lambda order: float(np.cumsum(d[order]).sum())  # noqa: E731
            rand = float(d.sum()) * (len(d) + 1) / 2
            best = area(np.argsort(-d, kind="stable"))
            if best - rand < 1e-9:
                continue
            total += (area(np.argsort(-(z[:, a] - z[:, b]), kind="stable")) - rand) / (best - rand)
            pairs += 1
    return total / pairs if pairs else 0.0


def fit_stacker(bases: list[np.ndarray], y: np.ndarray) -> tuple[dict, np.ndarray]:
    """Blend the base predictors' out-of-fold probabilities with the weights (from a small grid) whose differences
    best track the observed differences between models, then calibrate each model's blend with Platt scaling:
    q_m = sigmoid(a_m * logit(sum_k w_k p_k,m) + b_m). Returns (stacker spec, (n, M) out-of-fold quality)."""
    scores = {}
    for blend in BLENDS:
        if len(blend) == len(bases):
            scores[blend] = pairwise_agreement(logit(sum(w * b for w, b in zip(blend, bases))), y)
    # Occam: the linear head alone unless a blend is clearly better out of fold (on small uploads the choice between
    # near-equal blends is noise, and measured held-out, the linear head was the safest single predictor).
    linear_only = tuple(1.0 if k == 0 else 0.0 for k in range(len(bases)))
    best = max(scores, key=scores.get)
    if linear_only in scores and scores[best] < scores[linear_only] + LINEAR_PREFERENCE:
        best = linear_only
    z = logit(sum(w * b for w, b in zip(best, bases)))
    platt = np.zeros((y.shape[1], 2))
    stacked = np.zeros_like(y)
    for m in range(y.shape[1]):
        platt[m] = fit_logistic(z[:, m:m + 1], y[:, m:m + 1], c=100.0)[:, 0]
        stacked[:, m] = sigmoid(platt[m, 0] * z[:, m] + platt[m, 1])
    spec = {"blend": [float(w) for w in best], "platt": platt.tolist(),
            "agreement": {",".join(f"{w:.2f}" for w in k): round(v, 4) for k, v in scores.items()}}
    return spec, stacked
