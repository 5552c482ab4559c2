"""Fitting a custom router from a validated dataset (training-time only: numpy, scipy, xgboost).

Steps (each a task of the `train-custom-router` flow, see flows/train_custom_router.py):
1. targets: scores -> quality in 0..1 (`normalise_scores`): flipped when lower is better, then rescaled with the
   table's own min and max (one scale for all models, so models stay comparable); 0/1 data is unchanged;
2. folds: K folds by a hash of the prompt (stable under re-ordering);
3. base predictors per model, each with out-of-fold predictions: linear (soft-label logistic regression, all models
   in one L-BFGS problem, L2 strength from the encoder), XGBoost
   (`reg:logistic` on the 0..1 quality, one booster per fold, averaged when serving), kNN (similarity-weighted
   mean over the 30 nearest training prompts of the other folds);
4. blend and calibration: the three out-of-fold probabilities are averaged with weights from a small grid, each
   model's blend is Platt-scaled to the observed quality (q_m is calibrated on the score scale), and the weights
   whose calibrated predictions route best out of fold are kept (routing is about differences between models);
5. the floor (flows/custom_router/floor.py): per-cluster model means plus a cross-validated shrinkage of each
   model's per-prompt deviation, so that t = 0 never routes below the best single model without evidence;
6. evaluation and the trade-off schedule on the floor's predictions (flows.custom_router.calibration).
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from api.custom_router.model import knn_scores, logit, sigmoid


@dataclass(frozen=True)
class TrainConfig:
    folds: int = 3
    l2_c: float = 0.3  # inverse L2 strength of the linear heads, as scikit-learn's C (the encoder's linear_c)
    knn_k: int = 30
    knn_temperature: float = 10.0
    xgb_rounds: int = 60
    xgb_depth: int = 3
    xgb_eta: float = 0.15
    xgb_colsample: float = 0.3
    nthread: int = 2
    seed: int = 0


SMALL_UPLOAD_ROWS = 3000  # up to this many rows, 5 folds (more data per fold model); above it, 3 (time budget)


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
    # lazy: scipy loads only in the flow run that trains, not in the flow runner that imports the flows
    from scipy.optimize import minimize

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
    xgb = _xgboost()
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


def _xgboost():
    """The xgboost module, imported without scikit-learn where nothing imported it before: xgboost's import loads
    scikit-learn (and with it scipy.stats) for its scikit-learn wrappers, which training does not use, and that was
    5.9 s of a 5,000-row, 9-model training's 45 s on the loaded 2-core machine (xgboost alone: 1.3 s). xgboost
    runs without scikit-learn by design (a None in sys.modules makes the import raise ImportError, as if absent)."""
    if "xgboost" not in sys.modules and "sklearn" not in sys.modules:
        sys.modules["sklearn"] = None  # type: ignore[assignment]
        try:
            # lazy: xgboost (and its native library) loads only in the flow run that trains, not in the flow runner
            import xgboost
        finally:
            del sys.modules["sklearn"]
    # lazy: as above (already loaded here, or loaded with scikit-learn by whoever imported that first)
    import xgboost

    return xgboost


BLENDS = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (.5, .5, 0), (.5, 0, .5), (0, .5, .5), (1 / 3, 1 / 3, 1 / 3),
          (.6, .2, .2), (.2, .6, .2), (.2, .2, .6)]


def linear_margin(rows: int) -> float:
    """How much better than the linear head alone a blend must route out of fold to be chosen: shrinks like a
    standard error, 0.3 / sqrt(rows) (0.012 at 637 rows, 0.003 at 10,000). On small uploads the choice between
    near-equal blends is noise and the linear head was the safest single predictor held out; on large ones a real
    gain shows (RouteLLM MMLU, 10,000 rows: a blend routes 0.010 better out of fold and 0.018 APGR better held out)."""
    return 0.3 / max(rows, 1) ** 0.5


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
    """Blend the base predictors' out-of-fold probabilities, calibrate each model's blend with Platt scaling,
    q_m = sigmoid(a_m * logit(sum_k w_k p_k,m) + b_m), and keep the blend (from a small grid) whose calibrated
    out-of-fold predictions route best (`routing_gain`: routing is about the differences between models).
    Returns (stacker spec, (n, M) out-of-fold quality)."""
    fitted = {}
    for blend in BLENDS:
        if len(blend) == len(bases):
            platt, stacked = _platt(logit(sum(w * b for w, b in zip(blend, bases))), y)
            fitted[blend] = (routing_gain(stacked, y), platt, stacked)
    linear_only = tuple(1.0 if k == 0 else 0.0 for k in range(len(bases)))
    best = max(fitted, key=lambda b: fitted[b][0])
    if linear_only in fitted and fitted[best][0] < fitted[linear_only][0] + linear_margin(len(y)):
        best = linear_only
    _, platt, stacked = fitted[best]
    spec = {"blend": [float(w) for w in best], "platt": platt.tolist(),
            "routing_gain": {",".join(f"{w:.2f}" for w in k): round(v[0], 4) for k, v in fitted.items()}}
    return spec, stacked


def _platt(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-model Platt scaling of logits z to the observed quality: ((M, 2) slopes and intercepts, (n, M) quality)."""
    platt = np.zeros((y.shape[1], 2))
    stacked = np.zeros_like(y)
    for m in range(y.shape[1]):
        platt[m] = fit_logistic(z[:, m:m + 1], y[:, m:m + 1], c=100.0)[:, 0]
        stacked[:, m] = sigmoid(platt[m, 0] * z[:, m] + platt[m, 1])
    return platt, stacked
