"""Fitting the item-response-theory heads of the default router.

Model: P(model m answers query q well) = sigmoid(a(q) * (c_m - d(q))), where
- c_m is the model's capability, FIXED from its public figures (datasets/model_benchmarks.csv), so that any catalogue
  model with a prior can be scored, not only the two models seen in training;
- d(q) = X w_d + b_d is the query's difficulty and a(q) = softplus(X w_a + b_a) > 0 its discrimination (how sharply
  it separates strong from weak models), both linear in the shared query features.

Two models answer every training query, so (a, d) are identified per query up to noise; the L2 penalty shares
strength across similar queries. Outcomes may be soft (0..1), so judge scores can be used as targets.

`parametrisation="av"` fits v = a * d as the linear head instead of d (convex in v); measured on the held-out rows
it traded MMLU for MT-Bench without a net gain, so the shipped router uses the direct "ad" form.

The optimiser is scipy's L-BFGS on the exact gradient for a fixed number of iterations (no tolerance test, whose
iteration count would depend on the last bits of the loss): past convergence (about 110 iterations on the shipped
data, 100 to 115 with a 1e-12 tolerance) and short of the floating-point floor where no step lowers the loss any
more (136 to 160 iterations, depending on the CPU). flows/default_router/reproduction.py says what a retrain on
another CPU reproduces.

"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse


BUDGET = 120  # L-BFGS iterations (the module's note)


@dataclass(frozen=True)
class IrtHeads:
    parametrisation: str  # "av": first head is v = a * d (offset); "ad": first head is d itself
    w_difficulty: np.ndarray  # (n_features,)
    b_difficulty: float
    w_discrimination: np.ndarray  # (n_features,) pre-softplus
    b_discrimination: float
    iterations: int
    final_loss: float


def softplus(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def fit_irt(
    X,
    outcomes: np.ndarray,
    observed: np.ndarray,
    capabilities: np.ndarray,
    l2: float | np.ndarray = 1e-3,
    budget: int = BUDGET,
    weights: np.ndarray | None = None,
    parametrisation: str = "ad",
) -> IrtHeads:
    """Fit the difficulty and discrimination heads.

    X: (n, p) dense array or scipy sparse matrix of query features.
    outcomes: (n, k) targets in [0, 1] for k models; observed: (n, k) bool mask of which outcomes exist.
    capabilities: (k,) fixed capability of each model.
    weights: optional (n,) per-query weight (used to balance benchmarks of very different sizes).
    l2: penalty on both heads' weights, a scalar or one value per feature (blocks of features can be held tighter).
    """
    n, p = X.shape
    Y = np.asarray(outcomes, dtype=float)
    Mask = np.asarray(observed, dtype=float)
    c = np.asarray(capabilities, dtype=float)
    w_row = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    norm = float((Mask * w_row[:, None]).sum())
    pen = np.broadcast_to(np.asarray(l2, dtype=float), (p,))
    is_sparse = sparse.issparse(X)
    Xt = X.T.tocsr() if is_sparse else X.T

    def unpack(theta):
        return theta[:p], theta[p], theta[p + 1 : 2 * p + 1], theta[2 * p + 1]

    def loss_grad(theta):
        wd, bd, wa, ba = unpack(theta)
        za = X @ wa + ba
        a = softplus(za)
        if parametrisation == "av":
            # logit = a * c - v with v = a * d linear: convex in v, far better conditioned than a * (c - d)
            v = X @ wd + bd
            logits = a[:, None] * c[None, :] - v[:, None]
            diff = np.broadcast_to(c[None, :], logits.shape)
        else:
            d = X @ wd + bd
            diff = c[None, :] - d[:, None]  # (n, k)
            logits = a[:, None] * diff
        # BCE with logits, numerically stable
        nll = np.logaddexp(0.0, logits) - Y * logits
        wm = Mask * w_row[:, None]
        loss = float((wm * nll).sum() / norm)
        g_logit = wm * (_sigmoid(logits) - Y) / norm  # dL/dlogit
        if parametrisation == "av":
            g_d = -g_logit.sum(axis=1)
        else:
            g_d = -(g_logit * a[:, None]).sum(axis=1)
        g_a = (g_logit * diff).sum(axis=1)
        g_za = g_a * _sigmoid(za)
        grad = np.empty_like(theta)
        grad[:p] = Xt @ g_d + 2 * pen * wd
        grad[p] = g_d.sum()
        grad[p + 1 : 2 * p + 1] = Xt @ g_za + 2 * pen * wa
        grad[2 * p + 1] = g_za.sum()
        loss += float(pen @ (wd * wd) + pen @ (wa * wa))
        return loss, grad

    theta0 = np.zeros(2 * p + 2)
    # Start at the average difficulty between the models and a unit discrimination (softplus(0.55) ~ 1).
    theta0[p] = float(np.mean(c)) * (softplus(np.array(0.55)).item() if parametrisation == "av" else 1.0)
    theta0[2 * p + 1] = 0.55
    # ftol = gtol = 0: no tolerance stop, the budget decides (the module's note).
    res = optimize.minimize(loss_grad, theta0, jac=True, method="L-BFGS-B",
                            options={"maxiter": budget, "ftol": 0.0, "gtol": 0.0})
    wd, bd, wa, ba = unpack(res.x)
    return IrtHeads(
        parametrisation=parametrisation,
        w_difficulty=np.asarray(wd, dtype=float),
        b_difficulty=float(bd),
        w_discrimination=np.asarray(wa, dtype=float),
        b_discrimination=float(ba),
        iterations=int(res.nit),
        final_loss=float(res.fun),
    )


def predict_proba(X, heads: IrtHeads, capabilities: np.ndarray) -> np.ndarray:
    """(n, k) probability of a good answer for each query and model capability."""
    first = X @ heads.w_difficulty + heads.b_difficulty
    a = softplus(X @ heads.w_discrimination + heads.b_discrimination)
    c = np.asarray(capabilities, float)[None, :]
    if heads.parametrisation == "av":
        return _sigmoid(a[:, None] * c - first[:, None])
    return _sigmoid(a[:, None] * (c - first[:, None]))
