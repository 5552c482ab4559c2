"""The floor of a custom router as served: per-cluster model means plus a shrunk per-prompt deviation.

    q_m(x) = mu_m,c + w_m * (p_m(x) - pbar_m,c),   c = the nearest of the router's prompt clusters,

w_m being the learned shrinkage s_m, or the small tie-breaking weight `tie` where s_m = 0. How each part is learned:
flows/custom_router/floor.py. One definition for training (which scores its rows with it) and serving.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def clip_quality(q: np.ndarray) -> np.ndarray:
    """Floor predictions kept inside 0..1 (unknown candidates are mixed in on the logit scale)."""
    return np.clip(q, 0.001, 0.999)


def unit_rows(emb: np.ndarray) -> np.ndarray:
    e = np.asarray(emb, dtype=np.float64)
    return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)


def assign(emb: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The cluster of each row: the nearest centroid by cosine."""
    return np.argmax(unit_rows(emb) @ centroids.T, axis=1) if len(centroids) > 1 else np.zeros(len(emb), int)


@dataclass(frozen=True)
class Floor:
    centroids: np.ndarray  # (k, e) unit rows
    mu: np.ndarray  # (k, M) shrunk mean observed quality per cluster
    pbar: np.ndarray  # (k, M) mean prediction per cluster
    s: np.ndarray  # (M,) shrinkage of each model's deviation
    tie: float = 0.0  # the deviation weight of models with s = 0
    weights: np.ndarray = field(init=False, repr=False, compare=False)  # w_m, derived once

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", np.where(self.s > 0, self.s, self.tie))

    @classmethod
    def from_spec(cls, spec: dict) -> Floor:
        return cls(*(np.asarray(spec[k], dtype=np.float64) for k in ("centroids", "mu", "pbar", "s")),
                   tie=float(spec.get("tie", 0.0)))

    def spec(self) -> dict:
        return {"centroids": np.round(self.centroids, 6).tolist(), "mu": np.round(self.mu, 6).tolist(),
                "pbar": np.round(self.pbar, 6).tolist(), "s": [float(v) for v in self.s], "tie": float(self.tie)}

    def predict(self, p: np.ndarray, emb: np.ndarray) -> np.ndarray:
        """(n, M) served quality of n rows from their heads' predictions p and kNN features emb."""
        c = assign(emb, self.centroids)
        return clip_quality(self.mu[c] + self.weights[None, :] * (p - self.pbar[c]))

    def predict_one(self, heads, emb: np.ndarray) -> np.ndarray:
        """One query's served quality; `heads()` (the stacker's p) is only evaluated when some weight is not 0."""
        c = int(assign(emb[None, :], self.centroids)[0])
        if not np.any(self.weights):
            return clip_quality(self.mu[c].copy())
        return clip_quality(self.mu[c] + self.weights * (heads() - self.pbar[c]))
