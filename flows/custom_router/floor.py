"""The floor of a custom router: never below the best single model at t = 0 without evidence.

Argmax over many noisy per-model predictions is a winner's curse: with nine near-equal models, the model whose
prediction happens to be highest on a prompt is mostly the one whose error is largest, and routing by it can score
below always sending the prompt to the best model (issue 21). So the served quality of model m for prompt x is

    q_m(x) = mu_m,c + s_m * (p_m(x) - pbar_m,c),        c = c(x), the prompt's cluster,

- c(x): the nearest of k centroids (spherical k-means on the router's own kNN features, deterministic; k from
  a short list bounded by the rows, chosen by cross-validation, k = 1 being no clusters);
- mu_m,c: model m's mean observed quality in cluster c, shrunk toward its global mean (MU_PRIOR_ROWS pseudo-rows);
- p_m(x): the stacker's calibrated prediction, pbar_m,c its mean over the cluster's training rows;
- s_m: the shrinkage of model m's per-prompt deviation, learned (coordinate ascent over S_GRID) so that the
  out-of-fold accuracy of the argmax at t = 0 is highest. s = 0 everywhere routes each cluster to its best model,
  and with k = 1 to the best single model;
- P (local_prior, from LOCAL_PRIORS, 0 = unused): the cluster mean blended with the observed quality of the
  prompt's NEIGHBOURS nearest training prompts, the mean counting as P rows. A small kind of prompt (115 code
  prompts among 5,000) rarely gets a cluster of its own, but its prompts are each other's nearest neighbours.

Every choice is made on cross-fitted numbers (cluster means of the rows' other folds, the stacker's out-of-fold
predictions), and the accuracy the router reports is nested: for each outer fold, k and s are chosen on the other
folds alone and the fold is routed with them. A router whose nested accuracy at t = 0 does not beat the best
single model of the upload routes as that model at t = 0 (k = 1, s = 0) and says so.
"""

from __future__ import annotations

import numpy as np

from dataclasses import replace

from api.custom_router.floor import Floor, assign, unit_rows
from api.custom_router.neighbours import Neighbourhood
from flows.custom_router.neighbours import NeighbourTable, stack

S_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25)
CLUSTER_CHOICES = (1, 2, 3, 4, 6, 8)
ROWS_PER_CLUSTER = 150  # k <= rows / 150: a cluster's means rest on enough rows to be worth routing by
MU_PRIOR_ROWS = 30.0  # a cluster's mean is shrunk toward the model's global mean as if by 30 rows of it
ASCENT_PASSES = 3
KMEANS_ITERATIONS = 25
TIE_GRID = (0.01, 0.003, 0.001, 0.0003)
LOCAL_PRIORS = (0.0, 100.0, 30.0)


def with_tie_breaker(chosen: Floor, p: np.ndarray, emb: np.ndarray, near: Neighbourhood | None = None) -> Floor:
    """The floor with a small deviation weight for models whose s is 0, so that the trade-off dial can order
    prompts: with s = 0 every prompt of a cluster has the same predicted qualities, and at any cost_quality_tradeoff
    they would all leave the dearer model at once (the dial would jump from one model to the next instead of moving
    a tenth of the spend per step). The weight is the largest of TIE_GRID that leaves every t = 0 decision on the
    training rows unchanged; 0 when none does."""
    base = chosen.predict(p, emb, near).argmax(axis=1)
    for tie in TIE_GRID:
        trial = replace(chosen, tie=tie)
        if np.array_equal(trial.predict(p, emb, near).argmax(axis=1), base):
            return trial
    return chosen


def kmeans(emb: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """(k, e) centroids: spherical k-means, k-means++ start from a fixed seed (same rows -> same centroids)."""
    x = unit_rows(emb)
    if k <= 1 or len(x) <= k:
        c = x.mean(axis=0, keepdims=True)
        return c / max(float(np.linalg.norm(c)), 1e-12)
    rng = np.random.default_rng(seed)
    centroids = [x[rng.integers(len(x))]]
    for _ in range(1, k):
        dist = np.maximum(1.0 - np.max(x @ np.array(centroids).T, axis=1), 0.0)
        total = float(dist.sum())
        centroids.append(x[rng.choice(len(x), p=dist / total)] if total > 0 else x[rng.integers(len(x))])
    c = np.array(centroids)
    for _ in range(KMEANS_ITERATIONS):
        label = np.argmax(x @ c.T, axis=1)
        new = np.array([x[label == j].sum(axis=0) if np.any(label == j) else c[j] for j in range(k)])
        new = new / np.maximum(np.linalg.norm(new, axis=1, keepdims=True), 1e-12)
        if np.allclose(new, c):
            break
        c = new
    return c


def cluster_stats(p: np.ndarray, y: np.ndarray, label: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(mu, pbar), each (k, M): shrunk mean observed quality and mean prediction per cluster."""
    glob_y, glob_p = y.mean(axis=0), p.mean(axis=0)
    mu, pbar = np.tile(glob_y, (k, 1)), np.tile(glob_p, (k, 1))
    for j in range(k):
        rows = label == j
        n = float(rows.sum())
        if n:
            mu[j] = (y[rows].sum(axis=0) + MU_PRIOR_ROWS * glob_y) / (n + MU_PRIOR_ROWS)
            pbar[j] = p[rows].mean(axis=0)
    return mu, pbar


def t0_accuracy(q: np.ndarray, y: np.ndarray) -> float:
    return float(y[np.arange(len(y)), np.argmax(q, axis=1)].mean())


def learn_shrinkage(p: np.ndarray, y: np.ndarray, mu_rows: np.ndarray, pbar_rows: np.ndarray) -> tuple[np.ndarray,
                                                                                                          float]:
    """Per-model s by coordinate ascent over S_GRID from s = 0, maximising the t = 0 accuracy of
    mu + s * (p - pbar) (all per row, cross-fitted). A move must gain at least one row's worth over staying."""
    dev = p - pbar_rows
    s = np.zeros(p.shape[1])
    best = t0_accuracy(mu_rows, y)
    step = 0.5 / len(y)
    for _ in range(ASCENT_PASSES):
        moved = False
        for m in range(p.shape[1]):
            for value in S_GRID:
                if value == s[m]:
                    continue
                trial = s.copy()
                trial[m] = value
                acc = t0_accuracy(mu_rows + trial * dev, y)
                if acc > best + step:
                    best, s, moved = acc, trial, True
        if not moved:
            break
    return s, best


def _cluster_choices(rows: int) -> list[int]:
    return [k for k in CLUSTER_CHOICES if k == 1 or k * ROWS_PER_CLUSTER <= rows]


def select(p: np.ndarray, y: np.ndarray, emb: np.ndarray, folds: np.ndarray, table: NeighbourTable,
           ids: np.ndarray, held: tuple = ()) -> tuple[Floor, dict]:
    """The floor chosen on these rows (`ids`: their indices in `table`; `held`: folds already held out around
    them): for each k, clusters on all of them, cluster means cross-fitted over `folds` (each row sees the means of
    the other folds, and neighbours outside its fold and `held`); for each P, s learned on that; the (k, P) with
    the best accuracy wins. Returns (the floor with means over all rows, {k: cross-fitted accuracy})."""
    near = stack(len(table.y), y.shape[1], [(ids[folds == f], table.among(ids[folds == f], list(held) + [f]))
                                            for f in np.unique(folds)], ids)
    scores, fitted = {}, {}
    for k in _cluster_choices(len(y)):
        centroids = kmeans(emb, k)
        label = assign(emb, centroids)
        mu_rows, pbar_rows = np.zeros_like(y), np.zeros_like(y)
        for f in np.unique(folds):
            inside = folds != f
            mu, pbar = cluster_stats(p[inside], y[inside], label[inside], k)
            mu_rows[~inside], pbar_rows[~inside] = mu[label[~inside]], pbar[label[~inside]]
        for prior in LOCAL_PRIORS:
            base = mu_rows if prior == 0 else (near.sums + prior * mu_rows) / (near.count[:, None] + prior)
            s, acc = learn_shrinkage(p, y, base, pbar_rows)
            scores[(k, prior)], fitted[(k, prior)] = acc, (centroids, label, s)
    # ties: no neighbours, then fewer clusters
    k, prior = max(scores, key=lambda j: (scores[j], -(j[1] > 0), -j[0]))
    centroids, label, s = fitted[(k, prior)]
    mu, pbar = cluster_stats(p, y, label, k)
    by_k = {str(j): round(max(v for (kk, _), v in scores.items() if kk == j), 4) for j in {kk for kk, _ in scores}}
    return Floor(centroids, mu, pbar, s, local_prior=prior), dict(sorted(by_k.items(), key=lambda kv: int(kv[0])))


def best_single(y: np.ndarray) -> Floor:
    """Routes every prompt to the model with the best mean observed quality (k = 1, s = 0)."""
    return Floor(np.zeros((1, 1)), y.mean(axis=0, keepdims=True), np.zeros((1, y.shape[1])), np.zeros(y.shape[1]))


def fit_floor(p: np.ndarray, y: np.ndarray, emb: np.ndarray, folds: np.ndarray, log=print,
              table: NeighbourTable | None = None) -> tuple[Floor, dict, np.ndarray]:
    """(the served floor, its report, (n, M) nested cross-validated predictions of the floor actually served).

    p: the stacker's out-of-fold predictions; emb: the kNN features; folds: the training folds (outer folds here);
    table: the rows' cross-fitted neighbourhoods (built here when not given).
    """
    table = table or NeighbourTable(emb, y, folds)
    ids = np.arange(len(y))
    nested = np.zeros_like(y)
    single_nested = np.zeros(len(y))
    for f in np.unique(folds):
        inside = folds != f
        floor, _ = select(p[inside], y[inside], emb[inside], folds[inside], table, ids[inside], (f,))
        nested[~inside] = floor.predict(p[~inside], emb[~inside], table.among(ids[~inside], [f]))
        single_nested[~inside] = y[~inside][:, int(np.argmax(y[inside].mean(axis=0)))]
    floor, by_k = select(p, y, emb, folds, table, ids)
    learned = t0_accuracy(nested, y)
    single = float(y.mean(axis=0).max())
    beats = learned > single
    report = {"cv_router_quality_t0": round(learned, 4), "best_single_quality": round(single, 4),
              "cv_best_single_quality": round(float(single_nested.mean()), 4),
              "cv_gain_points": round(100 * (learned - single), 2), "cv_quality_by_clusters": by_k,
              "learned": {"clusters": int(len(floor.centroids)), "shrinkage": [float(v) for v in floor.s],
                          "local_prior": floor.local_prior},
              "routes_as_best_single_model_at_t0": not beats}
    own = table.own_fold_out()
    served = with_tie_breaker(floor if beats else best_single(y), p, emb, own)
    report.update(clusters=int(len(served.centroids)), shrinkage=[float(v) for v in served.s], tie=served.tie,
                  local_prior=served.local_prior)
    if beats:
        log(f"floor: {report['clusters']} clusters, shrinkage {report['shrinkage']}, neighbours' prior "
            f"{served.local_prior:g}; cross-validated accuracy at t=0 {learned:.4f} vs best single model "
            f"{single:.4f}")
        return served, report, nested
    log(f"floor: cross-validated accuracy at t=0 {learned:.4f} does not beat the best single model ({single:.4f}): "
        "the router routes as the best single model at t=0")
    return served, report, served.predict(p, emb, own)
