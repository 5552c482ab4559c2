"""The default router's skill model: which skills a query needs, and how much of each a model has.

    P(model m answers query q well) = sigmoid(a(q) * (u(q) . s_m - d(q)) + r_m)

- s_m: the model's skills on the axes knowledge, maths and code (api/routing/capability.py: public per-benchmark
  figures on the capability scale), plus a learned correction d_m for the models trained on;
- u(q) = softmax(N x + c): how much the query needs each skill (a maths word problem leans on maths, a function to
  write on code), learned from which models do well on which queries; d(q) the query's difficulty and a(q) > 0 how
  sharply it separates strong from weak models, as in the IRT router (api/routing/default_router.py);
- r_m: a small learned offset per training model; 0 for any other.

It is what lets the router send a maths question to the maths specialist and a code question to the code model
among many candidates. Inference is three small matrix-vector products and a softmax per query.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from api.routing.capability import AXES


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def pulled(capability: np.ndarray, pull: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Capabilities (m,) or (n, m) moved toward `pull` = (standings (m,), weights (m,) or (n, m)) by those weights
    (api/routing/default_router.py: a candidate set without maths evidence, on a word problem)."""
    standings, weights = pull
    return capability + weights * (standings - capability)


class SkillModel:
    def __init__(self, spec: dict, dim: int):
        self.w_sharpness = np.asarray(spec["w_sharpness"], np.float64)
        self.b_sharpness = float(spec["b_sharpness"])
        self.w_difficulty = np.asarray(spec["w_difficulty"], np.float64)
        self.b_difficulty = float(spec["b_difficulty"])
        self.w_need = np.asarray(spec["w_need"], np.float64).reshape(len(AXES), dim)
        self.b_need = np.asarray(spec["b_need"], np.float64)
        # Learned corrections of the training models, by canonical "provider/model".
        self.corrections = {key: np.asarray(v["skills"], np.float64) for key, v in spec["models"].items()}
        self.offsets = {key: float(v["offset"]) for key, v in spec["models"].items()}
        if self.w_sharpness.shape != (dim,) or self.w_difficulty.shape != (dim,) or len(self.b_need) != len(AXES):
            raise ValueError("skill model heads do not match the feature vector width")

    def candidate_skills(self, keys: Sequence[str], figures: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(m, axes) skills and (m,) offsets of candidates whose public figures are `figures` (m, axes)."""
        skills = np.array(figures, dtype=np.float64, copy=True)
        offsets = np.zeros(len(keys))
        for i, key in enumerate(keys):
            correction = self.corrections.get(key)
            if correction is not None:
                skills[i] += correction
                offsets[i] = self.offsets[key]
        return skills, offsets

    def query_heads(self) -> tuple[np.ndarray, np.ndarray]:
        """The query-side heads as one matrix (2 + axes, d) and bias, rows [sharpness, difficulty, need...], so a
        caller can compute them in the same product as its own heads."""
        return (np.vstack([self.w_sharpness, self.w_difficulty, self.w_need]),
                np.concatenate([[self.b_sharpness, self.b_difficulty], self.b_need]))

    def needs(self, vectors: np.ndarray) -> np.ndarray:
        """(n, axes) how much each query needs each skill, u(q)."""
        return _softmax(np.atleast_2d(vectors) @ self.w_need.T + self.b_need)

    def need_from_heads(self, z: np.ndarray) -> np.ndarray:
        """u(q) from the query heads' raw outputs z (2 + axes,) (see query_heads)."""
        return _softmax(z[2:])

    def predict_from_heads(self, z: np.ndarray, skills: np.ndarray, offsets: np.ndarray,
                           pull: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """(n, m) probabilities from the query heads' raw outputs z (n, 2 + axes) (see query_heads). `pull` =
        (standings (m,), weights (n, m)) moves each need-weighted capability that far toward a standing
        (api/routing/default_router.py: a set without maths evidence)."""
        a = np.logaddexp(0.0, z[:, 0])
        need = _softmax(z[:, 2:])
        capability = need @ skills.T
        if pull is not None:
            capability = pulled(capability, pull)
        return _sigmoid(a[:, None] * (capability - z[:, 1:2]) + offsets[None, :])

    def predict(self, vectors: np.ndarray, skills: np.ndarray, offsets: np.ndarray,
                pull: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """(n, m) probabilities for feature vectors (n, d) or one vector (d,), the latter returning (m,)."""
        x = np.atleast_2d(vectors).astype(np.float64, copy=False)
        w, b = self.query_heads()
        p = self.predict_from_heads(x @ w.T + b, skills, offsets, pull)
        return p[0] if np.ndim(vectors) == 1 else p
