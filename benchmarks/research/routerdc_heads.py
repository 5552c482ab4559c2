"""Offline: do per-model heads that share what the models have in common route RouterDC's specialists better?

    .venv/bin/python -m benchmarks.research.routerdc_heads

Same splits as benchmarks/custom_router_routerdc.py (in distribution: sha256(prompt) % 5 == 0 held out of each
set; out of distribution: leave one benchmark out), same features as the flow ([static | lexicon | hand], the
lexicon distilled by the flow's own teacher from the training part, cross-fitted), pure-quality routing (argmax).
Heads compared, each a soft-label logistic regression over all 7 models at the linear head's L2 strength:
- independent: the flow's linear head (each model its own weights);
- shared + specific: logit q_m = x (w_0 + d_m) + b_m, with d_m penalised rho times harder than w_0, so what the
  models share (how hard a prompt is) is learnt once and each model keeps only its own deviation
  (rho = 1 is the independent head up to the penalty on w_0).
Prints the gain over the best single model (points of task-averaged accuracy) for each. Measured only; the figures
are in docs/benchmarks.md. A few minutes: six e5 teachers of 20 s and 6 x 6 logistic fits.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from api.custom_router.encoders import STATIC_LINEAR_C, LexiconEncoder
from api.custom_router.model import logit, sigmoid
from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import Featurizer
from benchmarks.custom_router_routerdc import FILES, load
from flows.custom_router import training
from flows.custom_router.teacher import distil_lexicon
from flows.default_router.data import fold_of

RHOS = (1.0, 0.3, 0.1, 0.03)


def fit_shared(x: np.ndarray, y: np.ndarray, c: float, rho: float) -> np.ndarray:
    """(d + 1, M) weights w_0 + d_m of the shared + specific head (intercepts unpenalised)."""
    xa = np.hstack([x, np.ones((len(x), 1))]).astype(np.float64)
    d, m = xa.shape[1], y.shape[1]
    pen = np.ones((d, 1))
    pen[-1] = 0.0

    def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
        w0, dev = flat[:d, None], flat[d:].reshape(d, m)
        z = xa @ (w0 + dev)
        value = np.sum(np.logaddexp(0, z) - y * z) + np.sum(pen * w0 ** 2) / (2 * c) \
            + np.sum(pen * dev ** 2) / (2 * c * rho)
        g = xa.T @ (sigmoid(z) - y)
        return float(value), np.concatenate([g.sum(1) + (pen * w0 / c)[:, 0], (g + pen * dev / (c * rho)).ravel()])

    start = np.zeros(d + d * m)
    start[d:].reshape(d, m)[-1] = logit(np.clip(y.mean(0), 0.01, 0.99))
    res = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 300, "ftol": 1e-7})
    return res.x[:d, None] + res.x[d:].reshape(d, m)


def features(prompts: list[str], train: np.ndarray, featurizer: Featurizer) -> np.ndarray:
    distilled = distil_lexicon([prompts[i] for i in train], 150_000, log=lambda *_: None)
    encoder = LexiconEncoder(featurizer, distilled.lexicon)
    x = encoder.vectors(prompts)
    rows = train[distilled.rows]
    x[rows] = encoder.with_lexicon_vectors(x[rows], distilled.held_out)
    return x


def task_gain(picks: np.ndarray, scores: np.ndarray, tasks: np.ndarray) -> float:
    names = [t for t in FILES if (tasks == t).any()]
    router = np.mean([scores[np.flatnonzero(tasks == t), picks[tasks == t]].mean() for t in names])
    single = np.array([[scores[tasks == t, m].mean() for m in range(scores.shape[1])] for t in names])
    return 100 * (router - single.mean(axis=0).max())


def main() -> int:
    prompts, tasks, scores, _ = load()
    featurizer = Featurizer.load(DEFAULT_ARTEFACT_DIR)
    fold = np.array([fold_of(p) for p in prompts])
    splits = {"in distribution": [(np.flatnonzero(fold != 0), np.flatnonzero(fold == 0))],
              "out of distribution": [(np.flatnonzero(tasks != t), np.flatnonzero(tasks == t)) for t in FILES]}
    heads = {"independent (the flow's linear head)": lambda x, y: training.fit_logistic(x, y, STATIC_LINEAR_C)}
    heads |= {f"shared + specific, rho {rho}": (lambda x, y, r=rho: fit_shared(x, y, STATIC_LINEAR_C, r))
              for rho in RHOS}
    for name, parts in splits.items():
        picks = {h: np.zeros(len(prompts), dtype=int) for h in heads}
        for train, test in parts:
            x = features(prompts, train, featurizer)
            for h, fit in heads.items():
                w = fit(x[train], scores[train])
                picks[h][test] = training.predict_logistic(x[test], w).argmax(axis=1)
        covered = np.concatenate([test for _, test in parts])
        for h in heads:
            print(f"{name:20} {h:40} {task_gain(picks[h][covered], scores[covered], tasks[covered]):+.2f} points")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
