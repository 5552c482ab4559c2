"""Fit a challenger: a shrunk correction of the current router's predicted quality, per model and per cluster of the
router's embedding, from bandit feedback (the chosen model's 0/1 label only).

1. Clusters: spherical k-means (deterministic k-means++ start) on the unit embeddings of the labelled prompts, k
   growing with the labels (LABELS_PER_CLUSTER each, 2..MAX_CLUSTERS): a kind of prompt needs a few hundred labels
   before its own correction can be told from noise.
2. For model m and its labelled decisions: residual r_i = y_i - q_i (q_i the router's prediction then);
   - bias b_m = sum(r) / (n_m + PRIOR_LABELS): the mean residual shrunk towards 0 (the router), so few labels move
     it little;
   - per-cluster deviations w_m: a ridge regression of the centred residuals on the cluster indicators, i.e. each
     cluster's mean residual shrunk towards the model's mean by a pseudo-count; the pseudo-count is the one of a grid
     that generalised cross-validation (GCV) prefers, so clusters that agree with each other (noise) get the largest
     and w_m about 0, while clusters whose residuals differ consistently keep their difference.
Serving applies delta_m(x) = b_m + w_m[c(x)] (api/selection/learned.py, the one definition).

Measured (docs/benchmarks.md, "Issue 23"): on MMLU held out of the router's training, the per-cluster correction
fitted on 11,000 prompts with *both* models' outcomes gains +0.05 APGR; a ridge on all 141 router features did no
better and, fitted on bandit feedback, worse (it extrapolates from the prompts each model was chosen for).
"""

from __future__ import annotations

import numpy as np

from api.selection.learned import FORMAT, CorrectionParameters

PRIOR_LABELS = 25.0        # a model's mean residual counts half after 25 labels (0/1 labels: se 0.1 at n = 25)
MIN_LABELS = 20            # fewer labels for a model: no correction for it
LABELS_PER_CLUSTER = 125
MAX_CLUSTERS = 16
PSEUDO_COUNTS = tuple(10.0 ** k for k in np.arange(0.0, 4.01, 0.25))  # ridge penalties tried (labels)
KMEANS_ITERATIONS = 25
KMEANS_SAMPLE = 5_000      # centroids from an even spread of at most this many prompts: 16 kinds need no more


def cluster_count(labels: int) -> int:
    return int(min(MAX_CLUSTERS, max(2, labels // LABELS_PER_CLUSTER)))


def unit_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def spherical_kmeans(e: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """k unit centroids of the unit rows `e` (fixed-seed k-means++ start, a fixed number of iterations)."""
    rng = np.random.default_rng(seed)
    k = min(k, len(e))
    centroids = [e[rng.integers(len(e))]]
    for _ in range(1, k):
        distance = np.clip(1.0 - np.max(e @ np.array(centroids).T, axis=1), 0.0, None)
        total = float(distance.sum())
        centroids.append(e[rng.choice(len(e), p=distance / total)] if total > 0 else e[rng.integers(len(e))])
    c = np.array(centroids)
    for _ in range(KMEANS_ITERATIONS):
        assign = (e @ c.T).argmax(axis=1)
        sums = np.eye(len(c))[assign].T @ e
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        c = np.where(norms > 0, sums / np.where(norms > 0, norms, 1.0), c)
    return c


def gcv_ridge(z: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, float]:
    """(weights, penalty) of the ridge regression of centred r on centred z whose GCV score is lowest."""
    n = len(r)
    s, v = np.linalg.eigh(z.T @ z)
    s = np.clip(s, 0.0, None)
    c = v.T @ (z.T @ r)
    total = float(r @ r)
    best = (np.inf, PSEUDO_COUNTS[-1])
    for alpha in PSEUDO_COUNTS:
        shrink = 1.0 / (s + alpha)
        rss = total - 2 * float(np.sum(c * c * shrink)) + float(np.sum(s * (c * shrink) ** 2))
        df = float(np.sum(s * shrink))
        if df >= n - 1:
            continue
        score = rss / n / (1.0 - df / n) ** 2
        if score < best[0] - 1e-12:
            best = (score, alpha)
    alpha = best[1]
    return v @ (c / (s + alpha)), alpha


def fit_correction(features: np.ndarray, models: list[str], router_quality: np.ndarray, labels: np.ndarray,
                   feature_version: str, embedding_dim: int) -> tuple[CorrectionParameters, dict[str, dict]]:
    """The challenger's parameters and, per model, what was learned (labels, bias, penalty, spread of w)."""
    e = unit_rows(np.asarray(features, dtype=np.float64)[:, :embedding_dim])
    spread = np.linspace(0, len(e) - 1, min(len(e), KMEANS_SAMPLE)).round().astype(int)
    centroids = spherical_kmeans(e[spread], cluster_count(len(e))) if len(e) else np.zeros((1, embedding_dim))
    onehot = np.eye(len(centroids))[(e @ centroids.T).argmax(axis=1)] if len(e) else np.zeros((0, 1))
    residual = np.asarray(labels, dtype=np.float64) - np.asarray(router_quality, dtype=np.float64)
    chosen = np.asarray(models)
    keys, weights, biases, summary = [], [], [], {}
    for model in sorted(set(models)):
        rows = chosen == model
        n = int(rows.sum())
        if n < MIN_LABELS:
            continue
        z, r = onehot[rows], residual[rows]
        bias = float(r.sum() / (n + PRIOR_LABELS))
        w, alpha = gcv_ridge(z - z.mean(axis=0), r - r.mean())
        w = w - float(w @ z.mean(axis=0))  # deviations average 0 over the model's own prompts: b_m is its mean
        keys.append(model)
        weights.append(w.tolist())
        biases.append(bias)
        summary[model] = {"labels": n, "mean_residual": float(r.mean()), "bias": bias, "pseudo_count": alpha,
                          "cluster_spread": float(w.std())}
    params = CorrectionParameters(format=FORMAT, feature_version=feature_version, centroids=centroids.tolist(),
                                  models=keys, weights=weights, bias=biases)
    return params, summary
