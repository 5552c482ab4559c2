"""Corrections learned from a preference's own traffic, served on the decision path.

The learn-from-traffic flow (flows/learning/) groups the preference's prompts into k clusters of the router's
embedding (spherical k-means) and fits, for each model m of its traffic, a correction of the router's predicted
quality: delta_m(x) = b_m + w_m[c(x)], c(x) the cluster whose centroid is nearest the prompt's unit embedding, b_m
the model's mean feedback residual (label - predicted) shrunk towards 0, w_m its per-cluster deviations, shrunk by a
penalty that the residuals choose (flows/learning/fit.py). Noise or a handful of labels leave w near 0 and b small:
the router is kept where the labels do not agree. Serving adds delta to the candidates the correction knows (k dot
products per decision) and leaves the others alone; this is the one definition of the correction, used by the
flow's evaluation too.

Since issue 33 the flow also fits a lexical learner (api/selection/lexical.py, flows/learning/lexical_fit.py): a
version whose `lexical` is set moves each known model's predicted quality (additively, clipped to 0..1) by what the
prompt's hashed words and word pieces and its embedding say about that model on this traffic; it needs the text the
router scored, which the decision path passes. Cluster versions fitted before it still load and serve.

A version may instead promote the nearest-neighbour residual (api/selection/personalization.py): then it carries no
clusters or models, only `nearest_neighbour_residual`, and the service applies the preference's feedback memory as
it stands. One or the other is live for a preference, never both: they are fitted on the same feedback. A preference
with no promoted version is served by its router alone, whatever feedback it gave.

Which version serves a preference is a pointer in the store (storage/repositories/learning.py); every API worker
keeps the live ones in memory and reloads a preference's when the store's change feed names it.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import msgspec
import numpy as np

from api.selection.lexical import LexicalModel, LexicalParameters

log = logging.getLogger("switchboard.learning")
FORMAT = 1


class CorrectionParameters(msgspec.Struct, frozen=True):
    """The stored form (learned_corrections.parameters)."""

    format: int
    feature_version: str
    centroids: list[list[float]]  # k unit vectors in the router's embedding space
    models: list[str]             # provider/model keys, aligned with weights and bias
    weights: list[list[float]]    # per model, one deviation per cluster
    bias: list[float]
    nearest_neighbour_residual: bool = False  # serve the feedback memory instead (no clusters, no models)
    lexical: LexicalParameters | None = None  # the lexical learner (issue 33; no clusters, no models)


@dataclass(frozen=True)
class Correction:
    version_id: str
    feature_version: str
    centroids: np.ndarray  # (k, embedding dim)
    rows: dict[str, int]
    weights: np.ndarray    # (models, k)
    bias: np.ndarray
    nearest_neighbour_residual: bool = False
    lexical: LexicalModel | None = None

    @classmethod
    def of(cls, version_id: str, p: CorrectionParameters) -> "Correction":
        if p.format != FORMAT:
            raise ValueError(f"correction format {p.format} is not {FORMAT}")
        centroids = np.asarray(p.centroids, dtype=np.float64).reshape(len(p.centroids), -1) if p.centroids \
            else np.zeros((0, 0))
        return cls(version_id, p.feature_version, centroids, {m: i for i, m in enumerate(p.models)},
                   np.asarray(p.weights, dtype=np.float64).reshape(len(p.models), len(centroids)),
                   np.asarray(p.bias, dtype=np.float64), p.nearest_neighbour_residual,
                   LexicalModel(p.lexical) if p.lexical is not None else None)

    def clusters(self, features: np.ndarray) -> np.ndarray:
        """The nearest centroid of each row's embedding (the leading columns of the router's feature vector); a
        norm does not change which centroid is nearest, so none is taken."""
        features = np.atleast_2d(features)
        return (features[:, : self.centroids.shape[1]] @ self.centroids.T).argmax(axis=1)

    def delta(self, features: np.ndarray, keys: list[str]) -> np.ndarray:
        """The correction of each candidate's predicted quality (0 for models it was not fitted on)."""
        out = np.zeros(len(keys))
        known = [(i, r) for i, r in ((i, self.rows.get(k)) for i, k in enumerate(keys)) if r is not None]
        if known:
            c = int(self.clusters(np.asarray(features, dtype=np.float64))[0])
            idx = [r for _, r in known]
            out[[i for i, _ in known]] = self.weights[idx, c] + self.bias[idx]
        return out

    def apply(self, features: np.ndarray, keys: list[str], quality: np.ndarray, text: str = "",
              embedding_dim: int | None = None) -> np.ndarray:
        """The corrected quality of the candidates `keys`; `text` is the text the router scored, `features` its
        feature vector (whose first `embedding_dim` entries are the embedding)."""
        corrected = np.clip(np.asarray(quality, dtype=np.float64) + self.delta(features, keys), 0.0, 1.0)
        if self.lexical is None:
            return corrected
        vector = np.asarray(features, dtype=np.float64)
        return self.lexical.apply(text, vector[:embedding_dim] if embedding_dim else vector, keys, corrected)


def parse(version_id: str, parameters: str) -> Correction:
    return Correction.of(version_id, msgspec.json.decode(parameters, type=CorrectionParameters))


class LearnedCorrections:
    """Preference -> live correction, in memory; follows the store (Store.subscribe)."""

    def __init__(self, store, feature_version: str) -> None:
        self.store, self.feature_version = store, feature_version
        self._live: dict[str, Correction] = {}
        self._lock = threading.Lock()

    def attach(self) -> "LearnedCorrections":
        self.store.subscribe(self.refresh, resync=self.load_all)
        return self.load_all()

    def load_all(self) -> "LearnedCorrections":
        loaded = {}
        for version in self.store.learning.all_live():
            correction = self._parse(version.version_id, version.parameters)
            if correction is not None:
                loaded[version.preference_id] = correction
        with self._lock:
            self._live = loaded
        return self

    def refresh(self, preference_id: str) -> None:
        version = self.store.learning.live(preference_id)
        correction = None if version is None else self._parse(version.version_id, version.parameters)
        with self._lock:
            if correction is None:
                self._live.pop(preference_id, None)
            else:
                self._live[preference_id] = correction

    def _parse(self, version_id: str, parameters: str) -> Correction | None:
        try:
            correction = parse(version_id, parameters)
        except (ValueError, msgspec.DecodeError):
            log.exception("learned correction %s does not load; the router serves alone", version_id)
            return None
        if correction.feature_version != self.feature_version:  # docs/architecture.md, rule 4
            log.warning("learned correction %s was fitted on features %s, not %s; the router serves alone",
                        version_id, correction.feature_version, self.feature_version)
            return None
        return correction

    def get(self, preference_id: str | None) -> Correction | None:
        return None if preference_id is None else self._live.get(preference_id)
