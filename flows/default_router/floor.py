"""The floor: how far the default router may trust its per-prompt predictions, learned by leaving benchmarks out.

Serving (api/routing/default_router.py) predicts

    q(prompt, m) = mean_m(prompt) + alpha(prompt) * (p(prompt, m) - mean_m(prompt)),
    alpha(prompt) = need(prompt) . shrinkage

p is the scorers' per-prompt prediction, need the skill model's softmax over the axes (knowledge, maths, code) and
mean_m(prompt) the model's mean prediction over the REFERENCE_PER_BLOCK reference prompts nearest the prompt in the
space of the query heads (standardised): its mean quality on prompts like this one. The reference prompts are a fixed
spread of REFERENCE_PER_BLOCK training prompts of every trained benchmark. With shrinkage 0 a prompt goes at t=0 to
the best model on its neighbourhood of benchmarks (a per-cluster best single model); with 1 the per-prompt
prediction decides. (A mean per axis, weighted by the reference prompts' need, was tried first: it lumps GSM8K with
MATH level 5 and lost GSM8K's maths specialist, held-out RouterDC GSM8K 0.775 against 0.820 with the neighbours.)

The shrinkage per axis is what the per-prompt deviations are worth on benchmarks the scorers never saw: for each
benchmark in turn, the router is trained without it, and on its training rows the model-relative outcome
(y - mean over the prompt's models) less the model-relative anchor is regressed on need_k * (the model-relative
deviation), bounded to [0, 1] and ridged toward 0 (no evidence, no deviation). Each left-out benchmark counts alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from api.routing.capability import AXES
from api.routing.default_router import DefaultRouter
from flows.default_router.multi import Outcomes
from flows.default_router.report import many_models

REFERENCE_PER_BLOCK = 40  # reference prompts per trained block; a query's anchor is the mean over as many nearest
FIT_ROWS = 1000  # rows of a left-out block in the regression (a fixed spread, as skill_training.capped)
RIDGE = 1e-3  # toward 0, relative to the mean squared feature


@dataclass
class Rows:
    """One left-out block's rows as the regression sees them."""

    target: np.ndarray  # (cells,)
    features: np.ndarray  # (cells, axes)
    weight: float  # per cell
    means: np.ndarray  # (n, m) each model's mean quality on prompts like each row (the anchor)
    deviations: np.ndarray  # (n, m) per-prompt prediction less the mean
    need: np.ndarray  # (n, axes)
    outcomes: np.ndarray  # (n, m), NaN where unknown


def regression_rows(router: DefaultRouter, o: Outcomes, X: np.ndarray, rows: np.ndarray, weight: float) -> Rows:
    """One left-out block through a router trained without it (its floor's shrinkage 1: the per-prompt prediction)."""
    cands = many_models(o)
    Z = router.query_heads_batch(X[rows])
    means = router.mean_quality(Z, cands)
    return rows_of(means, router.raw_quality(Z, cands) - means, router.need(Z), o.scores[rows], weight)


def rows_of(means: np.ndarray, deviations: np.ndarray, need: np.ndarray, outcomes: np.ndarray, weight: float) -> Rows:
    """The regression's rows: per prompt, over the models that ran it (two at least), centred across models."""
    known = ~np.isnan(outcomes)
    count = known.sum(axis=1, keepdims=True).clip(min=1)

    def centred(A: np.ndarray) -> np.ndarray:
        A = np.where(known, A, 0.0)
        return A - A.sum(axis=1, keepdims=True) / count

    keep = known & (known.sum(axis=1, keepdims=True) >= 2)
    target = (centred(np.nan_to_num(outcomes)) - centred(means))[keep]
    features = (need[:, None, :] * centred(deviations)[:, :, None])[keep]
    return Rows(target, features, weight / max(int(keep.sum()), 1), means, deviations, need, outcomes)


def fit_shrinkage(parts: list[Rows]) -> np.ndarray:
    """Per-axis shrinkage in [0, 1]: weighted least squares of the targets on the features, ridged toward 0."""
    w = np.concatenate([np.full(len(p.target), p.weight) for p in parts])
    A = np.vstack([p.features for p in parts]) * np.sqrt(w)[:, None]
    b = np.concatenate([p.target for p in parts]) * np.sqrt(w)
    scale = float((A * A).sum()) / A.shape[1]
    A = np.vstack([A, np.sqrt(RIDGE * scale) * np.eye(len(AXES))])
    b = np.concatenate([b, np.zeros(len(AXES))])
    return optimize.lsq_linear(A, b, bounds=(0.0, 1.0), method="bvls").x


def pick_accuracy(part: Rows, shrinkage: np.ndarray | None) -> float:
    """Accuracy at t=0 (argmax over the block's models) with this shrinkage; None: the per-prompt prediction alone."""
    Y = part.outcomes
    alpha = np.ones(len(Y)) if shrinkage is None else part.need @ shrinkage
    q = np.where(np.isnan(Y), -np.inf, part.means + alpha[:, None] * part.deviations)
    return float(Y[np.arange(len(Y)), q.argmax(axis=1)].mean())


def best_single(part: Rows) -> float:
    """The best model's accuracy on the rows (over its known outcomes)."""
    return float(np.nanmax(np.nanmean(part.outcomes, axis=0)))


def reference_heads(router: DefaultRouter, features: list[np.ndarray]) -> list[list[float]]:
    """The reference prompts' query heads (the means' sample), rounded for router.json."""
    Z = router.query_heads_batch(np.vstack(features))
    return [[round(float(x), 6) for x in row] for row in Z]
