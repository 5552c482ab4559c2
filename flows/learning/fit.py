"""Fit a challenger: a shrunk correction of the current router's predicted quality, per model, from bandit feedback.

For model m and its labelled decisions (features x_i, label y_i in {0, 1}, the router's prediction q_i):
- residual r_i = y_i - q_i;
- bias b_m = sum(r) / (n_m + PRIOR_LABELS): a model's mean residual, shrunk towards 0 (the router) so that a few
  labels move it little;
- weights w_m: a ridge regression of the centred residuals on the standardised features, its penalty chosen by
  generalised cross-validation (GCV) over a grid: when the residuals do not depend on the features (noise, or a
  router already right) the largest penalty wins and w_m is about 0; when they agree across similar prompts the
  penalty falls and the correction follows the features.
Serving applies delta_m(x) = b_m + w_m . (z(x) - mean z_m) (api/selection/learned.py, the one definition).
"""

from __future__ import annotations

import numpy as np

from api.selection.learned import FORMAT, CorrectionParameters

PRIOR_LABELS = 25.0  # a model's mean residual counts half after 25 labels (binary labels: sd 0.5 -> se 0.1)
MIN_LABELS = 20      # fewer labels for a model: no correction for it
PENALTIES = tuple(10.0 ** k for k in np.arange(-1.0, 5.01, 0.5))  # ridge penalties tried, in label units


def standardisation(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = features.mean(axis=0)
    scale = features.std(axis=0)
    return mean, np.where(scale > 1e-9, scale, 1.0)


def gcv_ridge(z: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, float]:
    """(weights, penalty) of the ridge regression of centred r on centred z whose GCV score is lowest."""
    n = len(r)
    s, v = np.linalg.eigh(z.T @ z)
    s = np.clip(s, 0.0, None)
    c = v.T @ (z.T @ r)
    total = float(r @ r)
    best = (np.inf, PENALTIES[-1])
    for alpha in PENALTIES:
        shrink = 1.0 / (s + alpha)
        rss = total - 2 * float(np.sum(c * c * shrink)) + float(np.sum(s * (c * shrink) ** 2))
        df = float(np.sum(s * shrink))
        if df >= n - 1:
            continue
        score = rss / n / (1.0 - df / n) ** 2
        if score < best[0]:
            best = (score, alpha)
    alpha = best[1]
    return v @ (c / (s + alpha)), alpha


def fit_correction(features: np.ndarray, models: list[str], router_quality: np.ndarray, labels: np.ndarray,
                   feature_version: str) -> tuple[CorrectionParameters, dict[str, dict[str, float]]]:
    """The challenger's parameters and, per model, what was learned (labels, bias, penalty, weight norm)."""
    x = np.asarray(features, dtype=np.float64)
    mean, scale = standardisation(x)
    z_all = (x - mean) / scale
    residual = np.asarray(labels, dtype=np.float64) - np.asarray(router_quality, dtype=np.float64)
    chosen = np.asarray(models)
    keys, weights, biases, summary = [], [], [], {}
    for model in sorted(set(models)):
        rows = chosen == model
        n = int(rows.sum())
        if n < MIN_LABELS:
            continue
        z, r = z_all[rows], residual[rows]
        z_mean = z.mean(axis=0)
        bias = float(r.sum() / (n + PRIOR_LABELS))
        w, alpha = gcv_ridge(z - z_mean, r - r.mean())
        keys.append(model)
        weights.append(w.tolist())
        biases.append(bias - float(w @ z_mean))
        summary[model] = {"labels": n, "mean_residual": float(r.mean()), "bias": bias, "penalty": alpha,
                          "weight_norm": float(np.linalg.norm(w))}
    params = CorrectionParameters(format=FORMAT, feature_version=feature_version, mean=mean.tolist(),
                                  scale=scale.tolist(), models=keys, weights=weights, bias=biases)
    return params, summary
