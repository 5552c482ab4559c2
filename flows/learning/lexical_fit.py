"""Fit the lexical learner of a preference's traffic (issue 33): for every model with enough labels, how much better
or worse than the router predicts it answers this prompt, from the words and word pieces of the prompt
(api/selection/lexical.py) beside the router's embedding.

The model (a direct-method reward model: it needs labels, not exploration):
    E[label | x, m] = q_m(x) + b_m + x . (u + v_m), clipped to 0..1 (served without b_m: api/selection/lexical.py)
q_m the router's own prediction (with no evidence the learner says what the router says), b_m the model's mean
residual on this traffic (how the router is calibrated here; the gate's recalibrated champion has the same b_m, so
the gate judges only what comes after it), u a shared part (what makes a prompt hard for every model: learned from
all labels, whichever model was chosen) and v_m the model's own part (what it fails or passes relative to the
others: what changes a decision; the gap between two models moves by x . (v_m - v_m') only, so it is what changes the
ranking the dial splits). It is a ridge regression of the residuals y - q - b_m, solved in its kernel form (as many
unknowns as labelled rows, not as hashed buckets): K[i, j] = x_i . x_j * (1 + [same model]). One eigendecomposition
of K gives the fit for every penalty and its exact leave-one-out error; the penalty with the lowest is kept, so
labels that predict nothing (noise) get the largest penalty and weights near 0. Each label is weighted by how it was
collected: 1 / propensity, capped at MAX_WEIGHT (a deterministic decision counts once, an explored one for the share
of traffic it stands for). A logistic form (one Newton step from the router's logits) was tried: it moved GSM8K's
held-out APGR by -0.008 where this one gained, and noise labels made it change 95 % of MMLU's decisions.

Familiarity: what was learned on one kind of prompt says nothing about another (fitted on MMLU feedback, the learner
cost GSM8K 0.05-0.06 APGR before this guard). The fit keeps FAMILIAR_CLUSTERS centroids of its prompts' unit
embeddings and two quantiles of its own prompts' cosine to their nearest centroid (FAMILIAR_QUANTILES): serving
leaves a prompt less similar than the lower one to the router alone, applies the whole correction from the upper one
on, and a share growing linearly in between. Why a ramp and 32 centroids: with one hard threshold at the 5 % quantile
of 2-16 centroids, the 1-5 % of the other kind's prompts that passed it took the full correction, and that alone
moved the other kind's APGR by -0.01 to -0.02; on seeds 0-1 of GSM8K and MMLU (each learner applied to the other
kind) the ramp over 32 centroids kept the mean move to -0.003 (worst -0.005) and the judged gain at +0.050 (+0.047
before). Neither the lexical space (cosine to 16 lexical centroids, or to the nearest training prompt: common words
and character n-grams make every English prompt look alike) nor nearest neighbours in the embedding separated the
kinds as well.

Features: the prompt's hashed lexical vector (unit length) and the router's unit embedding scaled by
EMBEDDING_SCALE. The fit keeps, per model, the weights u + v_m on the buckets the training prompts use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from api.selection.lexical import featurize
from flows.learning.fit import spherical_kmeans, unit_rows

MIN_LABELS = 30
MAX_WEIGHT = 10.0
EMBEDDING_SCALE = 0.5
FAMILIAR_CLUSTERS = 32
FAMILIAR_QUANTILES = (0.05, 0.25)  # no correction below the first, all of it from the second
PENALTIES = tuple(10.0 ** k for k in np.arange(-1.0, 4.01, 0.25))


@dataclass(frozen=True)
class LexicalFit:
    models: list[str]
    intercept: list[float]
    lexical_index: list[np.ndarray]   # per model: hashed bucket indices (sorted)
    lexical_values: list[np.ndarray]  # per model: u + v_m on those buckets
    embedding: list[np.ndarray]       # per model: weights on the unit embedding (already scaled)
    penalty: float
    loo_error: float                  # the kept penalty's weighted leave-one-out mean squared error
    replay_gain: np.ndarray           # per labelled row: the recalibrated router's leave-one-out squared error less
                                      # the learner's (positive: the learner predicted the held-out label better)
    replay_weight: np.ndarray         # per labelled row: its weight
    rows: np.ndarray                  # the labelled rows fitted (indices into the input: those of kept models)
    held_out_shift: np.ndarray        # (rows, models): how each model's prediction for row i moves when row i is
                                      # left out of the fit (held_out_shift below)
    centroids: np.ndarray             # (k, embedding dim) unit centroids of the training prompts' embeddings
    familiar: float                   # the least cosine to a centroid at which a prompt is adjusted
    familiar_full: float              # the cosine from which it takes the whole adjustment
    labels: dict[str, int]


def design(texts: list[str], embeddings: np.ndarray):
    """(CSR matrix n x (buckets used + embedding dim), the bucket of each lexical column)."""
    # lazy: scipy only in the flow run (docs/architecture.md, "Traps already found")
    from scipy import sparse

    rows = [featurize(t or "") for t in texts]
    buckets = np.unique(np.concatenate([r[0] for r in rows])) if rows else np.zeros(0, dtype=np.int64)
    e = np.asarray(embeddings, dtype=np.float64)
    norms = np.linalg.norm(e, axis=1, keepdims=True)
    e = EMBEDDING_SCALE * e / np.where(norms > 0, norms, 1.0)
    d = e.shape[1]
    indptr, cols, vals = [0], [], []
    for (index, values), emb in zip(rows, e):
        cols += [np.searchsorted(buckets, index), len(buckets) + np.arange(d)]
        vals += [values, emb]
        indptr.append(indptr[-1] + len(index) + d)
    x = sparse.csr_matrix((np.concatenate(vals), np.concatenate(cols), np.array(indptr)),
                          shape=(len(rows), len(buckets) + d))
    return x, buckets


def fit_lexical(texts: list[str], embeddings: np.ndarray, chosen_models: list[str], router_quality: np.ndarray,
                labels: np.ndarray, propensity: np.ndarray) -> LexicalFit | None:
    """The learner fitted on labelled decisions (the chosen model's label each), or None when no model has
    MIN_LABELS labels."""
    chosen = np.asarray(chosen_models)
    names, counts = np.unique(chosen, return_counts=True) if len(chosen) else (np.array([]), np.array([]))
    kept = [str(m) for m, c in zip(names, counts) if c >= MIN_LABELS]
    if not kept:
        return None
    rows = np.flatnonzero(np.isin(chosen, kept))
    model_of = np.searchsorted(np.array(kept), chosen[rows])
    y = np.asarray(labels, dtype=np.float64)[rows]
    w = np.minimum(1.0 / np.clip(np.asarray(propensity, dtype=np.float64)[rows], 1e-6, 1.0), MAX_WEIGHT)
    raw = y - np.asarray(router_quality, dtype=np.float64)[rows]
    intercept0 = np.array([float(np.sum(w[model_of == m] * raw[model_of == m]) / np.sum(w[model_of == m]))
                           for m in range(len(kept))])
    residual = raw - intercept0[model_of]
    x, buckets = design([texts[i] for i in rows], np.asarray(embeddings)[rows])
    same = (model_of[:, None] == model_of[None, :]).astype(np.float64)
    kernel = (x @ x.T).toarray() * (1.0 + same)
    root = np.sqrt(w)
    s, q = np.linalg.eigh(kernel * root[:, None] * root[None, :])  # weighted: rows scaled by sqrt(w)
    s = np.clip(s, 0.0, None)
    target = q.T @ (root * residual)
    best = (np.inf, PENALTIES[-1])
    for penalty in PENALTIES:
        shrink = s / (s + penalty)
        fitted = q @ (shrink * target)                      # sqrt(w) * prediction
        leverage = np.einsum("ij,j,ij->i", q, shrink, q)    # diag of the hat matrix
        loo = (root * residual - fitted) / np.clip(1.0 - leverage, 1e-6, None)
        error = float(np.sum(loo ** 2) / np.sum(w))
        if error < best[0] - 1e-12:
            best = (error, penalty)
    error, penalty = best
    shrink = s / (s + penalty)
    leverage = np.einsum("ij,j,ij->i", q, shrink, q)
    learner_loo = (root * residual - q @ (shrink * target)) / np.clip(1.0 - leverage, 1e-6, None) / root
    # both leave-one-out: the recalibrated router's error on row i without row i in b_m, and the learner's with the
    # same correction of b_m added (its kernel part is exactly leave-one-out already)
    total_w = np.array([w[model_of == m].sum() for m in range(len(kept))])[model_of]
    router_loo = residual / np.clip(1.0 - w / total_w, 1e-6, None)
    learner_loo = learner_loo + (router_loo - residual)
    replay_gain = router_loo ** 2 - learner_loo ** 2
    kernel_loo = learner_loo - (router_loo - residual)      # the kernel part's own leave-one-out residual
    intercept_loo = router_loo - residual                    # how much b_m drops without row i (its model's)
    shift = held_out_shift(kernel / (1.0 + same), model_of, len(kept), root, q, s + penalty, kernel_loo,
                           intercept_loo)
    a = root * (q @ (target / (s + penalty)))              # dual coefficients: prediction = K a
    nb = len(buckets)
    shared = x.T @ a
    lex_index, lex_values, emb, intercept = [], [], [], []
    for m in range(len(kept)):
        own = np.where(model_of == m, a, 0.0)
        total = shared + x.T @ own
        keep = np.flatnonzero(np.abs(total[:nb]) > 1e-7)
        lex_index.append(buckets[keep])
        lex_values.append(total[:nb][keep])
        emb.append(total[nb:] * EMBEDDING_SCALE)
        intercept.append(float(intercept0[m]))
    e = unit_rows(np.asarray(embeddings, dtype=np.float64)[rows])
    centroids = spherical_kmeans(e, FAMILIAR_CLUSTERS)
    familiar, familiar_full = np.quantile((e @ centroids.T).max(axis=1), FAMILIAR_QUANTILES)
    return LexicalFit(kept, intercept, lex_index, lex_values, emb, penalty, error, replay_gain, w, rows, shift,
                      centroids, float(familiar), float(familiar_full), {m: int(c) for m, c in zip(names, counts)})


def held_out_shift(gram: np.ndarray, model_of: np.ndarray, models: int, root: np.ndarray, q: np.ndarray,
                   spectrum: np.ndarray, loo_error: np.ndarray, intercept_shift: np.ndarray) -> np.ndarray:
    """(rows, models): f_-i(x_i, m) - f(x_i, m), what each model's predicted quality for row i would lose if row i
    had not been fitted, for every model and not only the one that was chosen (the gate's policy replay needs both
    actions held out: in sample, the learner agrees with the logged action where it fitted a good label, and random
    labels then looked like a gain on a 419-label pool).

    Exact for the ridge: leaving row i out is fitting with its label replaced by its own leave-one-out prediction,
    so any prediction moves by -g * e_i, e_i = `loo_error` (row i's leave-one-out residual) and g = d f / d y_i =
    [k^T D (K_w + penalty)^-1 D]_i, k the kernel of (x_i, m) with the rows (`gram` * (1 + [same model as m])), D the
    rows' sqrt weights, K_w + penalty = Q diag(`spectrum`) Q^T. The chosen model's mean residual b_m also loses row i
    (`intercept_shift`)."""
    inverse_columns = (q / spectrum) @ (q.T * root[None, :])      # (K_w + penalty)^-1 D
    out = np.zeros((len(model_of), models))
    for m in range(models):
        k = gram * (1.0 + (model_of[None, :] == m)) * root[None, :]
        out[:, m] = -np.einsum("ij,ji->i", k, inverse_columns) * loo_error
    out[np.arange(len(model_of)), model_of] -= intercept_shift
    return out
