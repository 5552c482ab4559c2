"""Fitting the default router's skill model on per-query outcomes of many models.

    logit P(model m answers query q well) = e(q) + n(q) . s_m + r_m,     s_m = A f_m + d_m

- f_m: the model's public per-benchmark figures (knowledge, maths, code as logits of MMLU, GSM8K-like and HumanEval
  accuracy; datasets/model_benchmarks.csv, api/routing/skills.py);
- s_m (k values): its skills. A (k x figures) maps figures into skill space and is learned across the training
  models; d_m is a learned, ridge-shrunk correction for a model trained on (it captures what figures miss: a model
  better at science questions than its MMLU says). A model never trained on has d_m = 0 and r_m = 0, so any model
  with figures is scored;
- n(q) = softplus(N x + c) >= 0: how much the query needs each skill, and e(q) = w . x + b its ease, both learned
  from the query's features x (api/routing/features.py, shared with serving).

Every model answers every query of its benchmark, so which skills a kind of query needs is learned from which models
do well on it: a maths specialist that wins on GSM8K but not on MMLU pulls maths queries' need for its skills up.
Outcomes may be soft (a probability, a pass rate, a judge score rescaled to 0..1). L-BFGS from a fixed start: a
retrain reproduces the parameters to floating-point precision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize


@dataclass(frozen=True)
class Block:
    """One benchmark's training data: features (n, d), outcomes (n, m) with NaN where unknown, each column's model
    index into the figures table, and the block's total weight."""

    X: np.ndarray
    Y: np.ndarray
    model_index: np.ndarray
    weight: float = 1.0


@dataclass(frozen=True)
class SkillHeads:
    w_ease: np.ndarray  # (d,)
    b_ease: float
    w_need: np.ndarray  # (k, d), pre-softplus
    b_need: np.ndarray  # (k,)
    figure_map: np.ndarray  # A: (k, F)
    skill_residual: np.ndarray  # d: (M, k) per training model
    residual: np.ndarray  # r: (M,) per training model
    iterations: int
    final_loss: float

    def skills(self, figures: np.ndarray, model_index: np.ndarray | None = None) -> np.ndarray:
        """(m, k) skills of models with these figures; training models (model_index >= 0) get their correction."""
        s = figures @ self.figure_map.T
        if model_index is not None:
            known = model_index >= 0
            s[known] += self.skill_residual[model_index[known]]
        return s


def softplus(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def logits(X: np.ndarray, skills: np.ndarray, heads: SkillHeads, residual: np.ndarray | None = None) -> np.ndarray:
    """(n, m) logits of every query for models with these skills (m, k); residual (m,) adds r_m."""
    ease = X @ heads.w_ease + heads.b_ease
    need = softplus(X @ heads.w_need.T + heads.b_need)
    out = ease[:, None] + need @ skills.T
    return out if residual is None else out + residual[None, :]


def fit_skills(blocks: list[Block], figures: np.ndarray, k: int = 4, l2: float = 1e-3, l2_need: float = 1e-3,
               l2_map: float = 1e-2, l2_skill: float = 1.0, l2_residual: float = 1.0,
               max_iter: int = 1500) -> SkillHeads:
    """Minimise the weighted binary cross-entropy of every known outcome plus L2 penalties.

    Each block's loss is averaged over its known outcomes and multiplied by its weight, so benchmarks of very
    different sizes count by their weights, not their row counts."""
    d = blocks[0].X.shape[1]
    M, F = figures.shape
    sizes = (d, 1, k * d, k, k * F, M * k, M)
    offsets = np.cumsum((0,) + sizes)

    def unpack(theta: np.ndarray):
        p = [theta[offsets[i]:offsets[i + 1]] for i in range(len(sizes))]
        return p[0], p[1][0], p[2].reshape(k, d), p[3], p[4].reshape(k, F), p[5].reshape(M, k), p[6]

    prepared = []
    for block in blocks:
        known = ~np.isnan(block.Y)
        prepared.append((block.X, np.nan_to_num(block.Y), known, block.model_index,
                         block.weight / max(int(known.sum()), 1)))

    def loss_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b, N, c, A, D, r = unpack(theta)
        S = figures @ A.T + D  # (M, k)
        g_w, g_b, g_N, g_c, g_S, g_r = np.zeros(d), 0.0, np.zeros((k, d)), np.zeros(k), np.zeros((M, k)), np.zeros(M)
        total = 0.0
        for X, Y, known, idx, scale in prepared:
            z = X @ N.T + c
            need = softplus(z)
            logit = (X @ w + b)[:, None] + need @ S[idx].T + r[idx][None, :]
            p = sigmoid(logit)
            ce = -(Y * np.log(p + 1e-12) + (1 - Y) * np.log(1 - p + 1e-12))
            total += scale * float(ce[known].sum())
            E = np.where(known, p - Y, 0.0) * scale
            row = E.sum(axis=1)
            g_w += X.T @ row
            g_b += float(row.sum())
            B = (E @ S[idx]) * sigmoid(z)
            g_N += B.T @ X
            g_c += B.sum(axis=0)
            np.add.at(g_S, idx, E.T @ need)
            np.add.at(g_r, idx, E.sum(axis=0))
        g_A = g_S.T @ figures
        g_D = g_S.copy()
        total += 0.5 * (l2 * float(w @ w) + l2_need * float((N * N).sum()) + l2_map * float((A * A).sum())
                        + l2_skill * float((D * D).sum()) + l2_residual * float(r @ r))
        g_w += l2 * w
        g_N += l2_need * N
        g_A += l2_map * A
        g_D += l2_skill * D
        g_r += l2_residual * r
        return total, np.concatenate([g_w, [g_b], g_N.ravel(), g_c, g_A.ravel(), g_D.ravel(), g_r])

    theta0 = np.zeros(offsets[-1])
    theta0[offsets[3]:offsets[4]] = 0.5  # every need a little above zero at the start
    # A starts as the identity on the figures (skill j = figure j), extra skills start at zero: a fixed, symmetric-
    # breaking start, so the fit is deterministic.
    A0 = np.zeros((k, F))
    A0[np.arange(min(k, F)), np.arange(min(k, F))] = 1.0
    theta0[offsets[4]:offsets[5]] = A0.ravel()
    result = optimize.minimize(loss_and_grad, theta0, jac=True, method="L-BFGS-B",
                               options={"maxiter": max_iter, "ftol": 1e-11, "gtol": 1e-7})
    w, b, N, c, A, D, r = unpack(result.x)
    return SkillHeads(w_ease=w, b_ease=float(b), w_need=N, b_need=c, figure_map=A, skill_residual=D, residual=r,
                      iterations=int(result.nit), final_loss=float(result.fun))
