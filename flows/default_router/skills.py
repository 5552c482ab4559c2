"""Fitting the default router's skill model (api/routing/skills.py) on per-query outcomes of many models.

    logit P(m answers q well) = a(q) * (u(q) . (f_m + d_m) - d(q)) + r_m

f_m are the model's public figures per skill axis (fixed), d_m and r_m learned, ridge-shrunk corrections for the
training models, and a(q) = softplus(.), d(q) linear, u(q) = softmax(.) heads on the query features. Each benchmark
(a block) counts by its weight, not its row count: its loss is averaged over its known outcomes first. Outcomes may
be soft (a probability, a pass rate). L-BFGS from a fixed start (the knowledge axis dominant, i.e. today's one-skill
router) with a fixed iteration budget and no tolerance test (see flows/default_router/irt.py): deterministic on one
machine; flows/default_router/reproduction.py says what a retrain on another CPU reproduces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize


# L-BFGS iterations, fixed: past convergence (305-319 iterations with a 1e-11 tolerance on the shipped data) and
# short of the floating-point floor where no step lowers the loss (454-474, depending on the CPU), so every CPU runs
# exactly this many; a tolerance test would stop at an iteration count that depends on the last bits.
BUDGET = 400


@dataclass(frozen=True)
class Block:
    """One benchmark: features (n, d), outcomes (n, m) with NaN where unknown, each column's model index."""

    X: np.ndarray
    Y: np.ndarray
    model_index: np.ndarray
    weight: float = 1.0


@dataclass(frozen=True)
class FittedSkills:
    w_sharpness: np.ndarray
    b_sharpness: float
    w_difficulty: np.ndarray
    b_difficulty: float
    w_need: np.ndarray  # (axes, d)
    b_need: np.ndarray  # (axes,)
    corrections: np.ndarray  # (models, axes)
    offsets: np.ndarray  # (models,)
    iterations: int


def _softplus(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def fit_skills(blocks: list[Block], figures: np.ndarray, l2: float = 1e-3, l2_need: float = 1e-3,
               l2_correction: float = 1.0, l2_offset: float = 1.0, budget: int = BUDGET) -> FittedSkills:
    d = blocks[0].X.shape[1]
    M, k = figures.shape
    sizes = (d, 1, d, 1, k * d, k, M * k, M)
    off = np.cumsum((0,) + sizes)

    def unpack(theta: np.ndarray):
        p = [theta[off[i]:off[i + 1]] for i in range(len(sizes))]
        return p[0], p[1][0], p[2], p[3][0], p[4].reshape(k, d), p[5], p[6].reshape(M, k), p[7]

    prepared = []
    for block in blocks:
        known = ~np.isnan(block.Y)
        prepared.append((block.X, np.nan_to_num(block.Y), known, block.model_index,
                         block.weight / max(int(known.sum()), 1)))

    def loss_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        wa, ba, wd, bd, N, c, D, r = unpack(theta)
        S = figures + D
        g_wa, g_ba, g_wd, g_bd = np.zeros(d), 0.0, np.zeros(d), 0.0
        g_N, g_c, g_D, g_r = np.zeros((k, d)), np.zeros(k), np.zeros((M, k)), np.zeros(M)
        total = 0.0
        for X, Y, known, idx, scale in prepared:
            za = X @ wa + ba
            a = _softplus(za)
            diff = X @ wd + bd
            u = _softmax(X @ N.T + c)
            C = u @ S[idx].T
            logit = a[:, None] * (C - diff[:, None]) + r[idx][None, :]
            nll = np.logaddexp(0.0, logit) - Y * logit
            total += scale * float(nll[known].sum())
            E = np.where(known, _sigmoid(logit) - Y, 0.0) * scale
            g_a = (E * (C - diff[:, None])).sum(axis=1) * _sigmoid(za)
            g_wa += X.T @ g_a
            g_ba += float(g_a.sum())
            g_diff = -(a * E.sum(axis=1))
            g_wd += X.T @ g_diff
            g_bd += float(g_diff.sum())
            g_u = a[:, None] * (E @ S[idx])
            g_z = u * (g_u - (u * g_u).sum(axis=1, keepdims=True))
            g_N += g_z.T @ X
            g_c += g_z.sum(axis=0)
            np.add.at(g_D, idx, (a[:, None] * E).T @ u)
            np.add.at(g_r, idx, E.sum(axis=0))
        total += 0.5 * (l2 * float(wa @ wa + wd @ wd) + l2_need * float((N * N).sum())
                        + l2_correction * float((D * D).sum()) + l2_offset * float(r @ r))
        g_wa += l2 * wa
        g_wd += l2 * wd
        g_N += l2_need * N
        g_D += l2_correction * D
        g_r += l2_offset * r
        return total, np.concatenate([g_wa, [g_ba], g_wd, [g_bd], g_N.ravel(), g_c, g_D.ravel(), g_r])

    theta0 = np.zeros(off[-1])
    theta0[off[1]] = 0.5  # unit-ish sharpness
    start_need = np.zeros(k)
    start_need[0] = 2.0  # knowledge first: the one-skill router is where the fit starts
    theta0[off[5]:off[6]] = start_need
    # ftol = gtol = 0: no tolerance stop, the budget decides (BUDGET's note).
    result = optimize.minimize(loss_and_grad, theta0, jac=True, method="L-BFGS-B",
                               options={"maxiter": budget, "ftol": 0.0, "gtol": 0.0})
    wa, ba, wd, bd, N, c, D, r = unpack(result.x)
    return FittedSkills(w_sharpness=wa, b_sharpness=float(ba), w_difficulty=wd, b_difficulty=float(bd), w_need=N,
                        b_need=c, corrections=D, offsets=r, iterations=int(result.nit))


def predict(fit: FittedSkills, X: np.ndarray, figures: np.ndarray, model_index: np.ndarray) -> np.ndarray:
    """(n, m) probabilities for training models `model_index` (their corrections applied)."""
    S = figures[model_index] + fit.corrections[model_index]
    a = _softplus(X @ fit.w_sharpness + fit.b_sharpness)
    diff = X @ fit.w_difficulty + fit.b_difficulty
    u = _softmax(X @ fit.w_need.T + fit.b_need)
    return _sigmoid(a[:, None] * (u @ S.T - diff[:, None]) + fit.offsets[model_index][None, :])
