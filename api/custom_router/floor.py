"""The floor of a custom router as served: per-cluster model means plus a shrunk per-prompt deviation, and a
fallback for prompts unlike anything the router was trained on.

    q_m(x) = base_m(x) + w_m * (p_m(x) - pbar_m,c),   c = the nearest of the router's prompt clusters,
    base_m(x) = mu_m,c                                           (local_prior = 0), or
              = (sum of m's quality on x's nearest training prompts + P * mu_m,c) / (count + P)   (P = local_prior),
    q_m(x) = fallback_m   when familiarity(x) < threshold        (an unfamiliar prompt: the upload's own means),

w_m being the learned shrinkage s_m, or the small tie-breaking weight `tie` where s_m = 0; familiarity and the
neighbours' quality come from api/custom_router/neighbours.py. How each part is learned: flows/custom_router/
floor.py (clusters, P, s) and flows/custom_router/familiarity.py (threshold). One definition for training (which
scores its rows with it) and serving.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from api.custom_router.neighbours import Neighbourhood

OFF = float("-inf")  # the familiarity threshold of a router that never falls back


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
    local_prior: float = 0.0  # P: pseudo-rows of the cluster mean against the nearest prompts' quality; 0 = unused
    threshold: float = OFF  # familiarity below which a prompt gets `fallback`
    fallback: np.ndarray | None = None  # (M,) the upload's mean quality per model (its best single model first)
    weights: np.ndarray = field(init=False, repr=False, compare=False)  # w_m, derived once

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", np.where(self.s > 0, self.s, self.tie))

    @property
    def reads_neighbours(self) -> bool:
        """Whether predictions need the prompt's neighbourhood (one product with the training prompts)."""
        return self.local_prior > 0 or (self.threshold > OFF and self.fallback is not None)

    @classmethod
    def from_spec(cls, spec: dict) -> Floor:
        fallback = spec.get("fallback")
        return cls(*(np.asarray(spec[k], dtype=np.float64) for k in ("centroids", "mu", "pbar", "s")),
                   tie=float(spec.get("tie", 0.0)), local_prior=float(spec.get("local_prior", 0.0)),
                   threshold=OFF if spec.get("threshold") is None else float(spec["threshold"]),
                   fallback=None if fallback is None else np.asarray(fallback, dtype=np.float64))

    def spec(self) -> dict:
        return {"centroids": np.round(self.centroids, 6).tolist(), "mu": np.round(self.mu, 6).tolist(),
                "pbar": np.round(self.pbar, 6).tolist(), "s": [float(v) for v in self.s], "tie": float(self.tie),
                "local_prior": float(self.local_prior),
                "threshold": None if self.threshold == OFF else float(self.threshold),
                "fallback": None if self.fallback is None else np.round(self.fallback, 6).tolist()}

    def base(self, c: np.ndarray, near: Neighbourhood | None) -> np.ndarray:
        """(n, M) the cluster means, blended with the neighbours' observed quality when local_prior > 0."""
        if self.local_prior <= 0 or near is None:
            return self.mu[c]
        return (near.sums + self.local_prior * self.mu[c]) / (near.count[:, None] + self.local_prior)

    def unfamiliar(self, near: Neighbourhood | None) -> np.ndarray | None:
        """(n,) which rows fall back, or None when none can."""
        if self.threshold == OFF or self.fallback is None or near is None:
            return None
        return near.familiarity < self.threshold

    def predict(self, p: np.ndarray, emb: np.ndarray, near: Neighbourhood | None = None) -> np.ndarray:
        """(n, M) served quality of n rows from their heads' predictions p, kNN features emb and, for a floor that
        reads them, their neighbourhoods."""
        c = assign(emb, self.centroids)
        q = clip_quality(self.base(c, near) + self.weights[None, :] * (p - self.pbar[c]))
        away = self.unfamiliar(near)
        return q if away is None else np.where(away[:, None], clip_quality(self.fallback)[None, :], q)

    def predict_one(self, heads, emb: np.ndarray, near: Neighbourhood | None = None) -> np.ndarray:
        """One query's served quality; `heads()` (the stacker's p) is only evaluated when some weight is not 0 and
        the prompt is familiar."""
        away = self.unfamiliar(near)
        if away is not None and away[0]:
            return clip_quality(self.fallback.copy())
        c = int(assign(emb[None, :], self.centroids)[0])
        base = self.base(np.array([c]), near)[0]
        if not np.any(self.weights):
            return clip_quality(base.copy())
        return clip_quality(base + self.weights * (heads() - self.pbar[c]))
