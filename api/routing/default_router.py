"""The learned default router: an item-response-theory scorer over the shared query features.

    P(model m answers query q well) = sigmoid(a(q) * (c_m - d(q)))

d(q) (difficulty) and a(q) > 0 (discrimination) are linear heads on the query features, learned from the RouteLLM
per-query outcomes of GPT-4-1106-preview and Mixtral-8x7B with those two models' capabilities held at their public
priors; c_m comes from the capability prior (api.routing.capability), so any model with a prior, a family match or
a price gets a score. Inference is two dot products and a sigmoid per candidate: numpy only.

Artefact (datasets/default_router/, written by flows.default_router.train):
- encoder.json, static_embedding.npy, tokenizer.json: the text encoder (api.routing.features);
- router.json: feature_version, the two heads, the trade-off schedule, the fallback line, training report.
Loading refuses an artefact whose feature_version differs from the code's FEATURE_VERSION.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from api.routing.capability import CapabilityPrior, FallbackLine, read_prior
from api.routing.features import (
    FEATURE_VERSION,
    FeatureVersionMismatch,
    Featurizer,
    QueryFeatures,
)
from api.routing.router import Candidate
from api.shipped import shipped

DEFAULT_ARTEFACT_DIR = shipped("default_router")
DEFAULT_PRIOR_PATH = shipped("capability_prior.csv")

__all__ = ["DefaultRouter", "FeatureVersionMismatch", "load_default_router"]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class DefaultRouter:
    """Scores candidates for a query. Immutable after load; safe to share between threads."""

    name = "default"

    def __init__(self, featurizer: Featurizer, spec: dict, prior: CapabilityPrior):
        if spec.get("feature_version") != FEATURE_VERSION:
            raise FeatureVersionMismatch(
                f"default router artefact has feature version {spec.get('feature_version')!r}, "
                f"code computes {FEATURE_VERSION!r}; retrain it (train-default-router)"
            )
        heads = spec["heads"]
        self.featurizer = featurizer
        # Each head = shared weights + gate * extra weights, the gate (features.numeric_gate) opening for free-form
        # quantitative prompts. Rows: difficulty, discrimination.
        self._w_shared = np.stack(
            [np.asarray(heads["w_difficulty"], np.float32), np.asarray(heads["w_discrimination"], np.float32)]
        )
        self._w_gated = np.stack(
            [
                np.asarray(heads["w_difficulty_gated"], np.float32),
                np.asarray(heads["w_discrimination_gated"], np.float32),
            ]
        )
        if self._w_shared.shape != (2, featurizer.dim) or self._w_gated.shape != (2, featurizer.dim):
            raise FeatureVersionMismatch("head width does not match the feature vector width")
        self._bias = np.array([float(heads["b_difficulty"]), float(heads["b_discrimination"])])
        # The schedule is stored without its last entry (infinity has no JSON spelling).
        self.schedule: tuple[float, ...] = tuple(float(x) for x in spec["schedule"]) + (float("inf"),)
        self.prior = prior
        self.spec = spec
        self._capability_cache: dict[tuple, float] = {}

    def heads(self, features: QueryFeatures) -> tuple[float, float]:
        """(difficulty, discrimination) of the query."""
        x = features.vector
        out = self._w_shared @ x + self._bias
        g = float(self.featurizer.gate(x))
        if g > 0.0:
            out = out + g * (self._w_gated @ x)
        d, z = out
        return float(d), float(np.logaddexp(0.0, z))

    def capabilities(self, candidates: Sequence[Candidate]) -> np.ndarray:
        return np.array([self._capability(c) for c in candidates], dtype=float)

    def _capability(self, c: Candidate) -> float:
        # The prior lookup normalises ids with regexes; memoise it per model and price (a hot-path cost otherwise).
        key = (c.provider, c.model, c.output_price, c.context_length)
        value = self._capability_cache.get(key)
        if value is None:
            if len(self._capability_cache) > 50_000:  # custom models are caller-defined: keep memory bounded
                self._capability_cache.clear()
            value = self._capability_cache[key] = self.prior.lookup(*key)[0]
        return value

    def predict_quality(self, features: QueryFeatures, candidates: Sequence[Candidate]) -> np.ndarray:
        d, a = self.heads(features)
        return _sigmoid(a * (self.capabilities(candidates) - d))

    def predict_quality_batch(self, vectors: np.ndarray, candidates: Sequence[Candidate]) -> np.ndarray:
        """(n, m) quality of many queries' feature vectors (the trade-off dial's calibration pool)."""
        out = vectors @ self._w_shared.T + self._bias
        out = out + self.featurizer.gate(vectors)[:, None] * (vectors @ self._w_gated.T)
        d, a = out[:, 0], np.logaddexp(0.0, out[:, 1])
        return _sigmoid(a[:, None] * (self.capabilities(candidates)[None, :] - d[:, None]))

    def explain(self, candidates: Sequence[Candidate]) -> list[dict]:
        """Where each candidate's capability came from (prior row, family match or price fallback)."""
        out = []
        for c in candidates:
            value, how = self.prior.lookup(c.provider, c.model, c.output_price, c.context_length)
            out.append({"model": c.key, "capability": value, "source": how})
        return out


def load_default_router(
    folder: Path | str | None = None, prior_path: Path | str | None = None
) -> DefaultRouter:
    """Load the committed artefact (a few tens of milliseconds). Raises FeatureVersionMismatch on a stale one."""
    folder = Path(folder) if folder is not None else DEFAULT_ARTEFACT_DIR
    spec = json.loads((folder / "router.json").read_text(encoding="utf-8"))
    if spec.get("feature_version") != FEATURE_VERSION:
        # Check before building the encoder: a stale artefact should fail fast and say why.
        raise FeatureVersionMismatch(
            f"default router artefact in {folder} has feature version {spec.get('feature_version')!r}, "
            f"code computes {FEATURE_VERSION!r}; retrain it (train-default-router)"
        )
    featurizer = Featurizer.load(folder)
    prior_rows = read_prior(Path(prior_path) if prior_path is not None else DEFAULT_PRIOR_PATH)
    prior = CapabilityPrior(prior_rows, FallbackLine(**spec["fallback"]))
    return DefaultRouter(featurizer, spec, prior)
