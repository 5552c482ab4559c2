"""A trained custom router, as served: loads an artefact folder and scores the candidates it knows.

    p_m(x) = sigmoid(a_m * logit(w_1 linear_m(x) + w_2 trees_m(x) + w_3 knn_m(x)) + b_m)
    q_m(x) = mu_m,c + s_m * (p_m(x) - pbar_m,c),   c = the nearest of the router's prompt clusters (the floor)

- linear_m: soft-label logistic regression on the query vector [embedding | hand features];
- trees_m: the XGBoost models of the cross-validation folds, averaged (evaluated with numpy, api.custom_router.trees);
- knn_m: similarity-weighted mean score of model m on the 30 most similar training prompts (cosine on the embedding);
- w: the blend, chosen on out-of-fold predictions; (a, b)_m: Platt scaling of model m's blend to the observed
  score scale (scores rescaled to 0..1, see flows.custom_router.training);
- the floor (api/custom_router/floor.py, learned by flows/custom_router/floor.py): mu_m,c model m's mean quality
  in cluster c, pbar_m,c its mean prediction there, s_m the shrinkage of its per-prompt deviation learned by cross-validation (a model with s = 0
  keeps a tie-breaking weight, `tie`, so the trade-off dial can order prompts). With every weight 0 the heads are
  not evaluated at all. Routers trained before the floor have none: q = p. The floor may also blend the cluster
  means with the quality of the prompt's nearest training prompts, and sends a prompt unlike its training prompts
  (familiarity below a threshold learned at training) to the upload's best single model: the upload's own means
  (api/custom_router/neighbours.py, flows/custom_router/familiarity.py).

Artefact folder (immutable, one per training job; "promote" = the custom_routers.is_live pointer):
router.json (format, encoder and its version, models and prices, schedule, stacker), linear.npy,
knn_embeddings.npy (float16), knn_targets.npy, xgb/m<i>_f<k>.json (XGBoost JSON), and for the `lexicon` encoder
lexicon_tokens.json and lexicon.npy (api/custom_router/lexicon.py). No pickles (docs/architecture.md, rule 5).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from api.custom_router.encoders import (
    ENGLISH,
    LEXICON,
    MULTILINGUAL_E5,
    Encoder,
    EnglishEncoder,
    LexiconEncoder,
)
from api.custom_router.floor import Floor
from api.custom_router.legacy import migrated_e5_encoder
from api.custom_router.lexicon import Lexicon
from api.custom_router.neighbours import References
from api.custom_router.trees import TreeEnsembles
from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import FeatureVersionMismatch, Featurizer, QueryFeatures
from api.routing.router import Candidate

FORMAT = "switchboard-custom-router/1"
_EPS = 1e-4


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EPS, 1 - _EPS)
    return np.log(p / (1 - p))


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def knn_scores(sims: np.ndarray, targets: np.ndarray, k: int, temperature: float) -> np.ndarray:
    """Similarity-weighted mean target of the k nearest rows. sims: (q, n); targets: (n, M) -> (q, M)."""
    k = min(k, sims.shape[1])
    idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    top = np.take_along_axis(sims, idx, axis=1)
    w = np.exp(temperature * (top - top.max(axis=1, keepdims=True)))
    return np.einsum("qk,qkm->qm", w, targets[idx]) / w.sum(axis=1, keepdims=True)


class CustomRouter:
    """Immutable after load; safe to share between threads."""

    def __init__(self, folder: Path, spec: dict, encoder: Encoder):
        if spec.get("format") != FORMAT:
            raise FeatureVersionMismatch(f"{folder}: unknown custom router format {spec.get('format')!r}")
        if spec["feature_version"] != encoder.version:
            raise FeatureVersionMismatch(
                f"custom router in {folder} was trained with features {spec['feature_version']!r}, this code "
                f"computes {encoder.version!r}; train it again")
        self.folder, self.spec, self.encoder = folder, spec, encoder
        self.name = f"custom:{spec['job_id']}"
        self.language = spec["language"]
        self.models: list[str] = [m["key"] for m in spec["models"]]
        self.index = {key: i for i, key in enumerate(self.models)}
        self.schedule: tuple[float, ...] = tuple(float(x) for x in spec["schedule"]) + (float("inf"),)
        self.blend = np.asarray(spec["stacker"]["blend"], dtype=np.float64)  # (3,)
        self.platt = np.asarray(spec["stacker"]["platt"], dtype=np.float64)  # (M, 2)
        self.knn_k, self.knn_temperature = int(spec["knn"]["k"]), float(spec["knn"]["temperature"])
        self.linear = np.load(folder / "linear.npy").astype(np.float64)  # (d + 1, M)
        self.knn_embeddings = np.load(folder / "knn_embeddings.npy").astype(np.float32)  # (n, e)
        self.knn_targets = np.load(folder / "knn_targets.npy").astype(np.float64)  # (n, M)
        folds = int(spec["xgb"]["folds"])
        self.trees = TreeEnsembles([[folder / "xgb" / f"m{m}_f{k}.json" for k in range(folds)]
                                    for m in range(len(self.models))])
        self.floor = Floor.from_spec(spec["floor"]) if "floor" in spec else None
        # the training prompts as the floor compares a new one with them (familiarity, the neighbours' quality)
        self.references = (References(self.knn_embeddings, self.knn_targets)
                           if self.floor is not None and self.floor.reads_neighbours else None)
        if self.linear.shape[0] != encoder.dim + 1:
            raise FeatureVersionMismatch("linear head width does not match the encoder's vector width")

    def known(self, candidates: Sequence[Candidate]) -> np.ndarray:
        return np.array([c.key in self.index for c in candidates], dtype=bool)

    def quality_of_all(self, vector: np.ndarray) -> np.ndarray:
        """Predicted quality (0..1) of every trained model for one query vector."""
        x = np.asarray(vector, dtype=np.float32).astype(np.float64)
        if self.floor is None:
            return self.heads(x)
        # k dot products on the kNN part of the vector (and, for a floor that reads them, one product with the
        # training prompts); the heads only where some model's deviation counts and the prompt is familiar
        emb = x[self.encoder.knn_columns]
        near = self.references.around(emb) if self.references is not None else None
        return self.floor.predict_one(lambda: self.heads(x), emb, near)

    def heads(self, x: np.ndarray) -> np.ndarray:
        """The stacker's calibrated prediction p_m(x) of every trained model."""
        lin = sigmoid(np.append(x, 1.0) @ self.linear)
        mixed = self.blend[0] * lin
        if self.blend[1] > 0:
            mixed = mixed + self.blend[1] * self.trees.predict(x)
        if self.blend[2] > 0:  # the kNN scan (one pass over the training embeddings) only when the blend uses it
            emb = x[self.encoder.knn_columns].astype(np.float32)
            mixed = mixed + self.blend[2] * knn_scores((self.knn_embeddings @ emb)[None, :], self.knn_targets,
                                                       self.knn_k, self.knn_temperature)[0]
        return sigmoid(self.platt[:, 0] * logit(mixed) + self.platt[:, 1])

    def predict_quality(self, features: QueryFeatures, candidates: Sequence[Candidate],
                        text: str | None = None) -> np.ndarray:
        """Aligned with `candidates`; NaN for models this router was not trained on (the caller decides)."""
        vector = self.encoder.vector(text or "", features)
        q = self.quality_of_all(vector)
        return np.array([q[self.index[c.key]] if c.key in self.index else np.nan for c in candidates])


def load_custom_router(folder: Path | str, featurizer: Featurizer | None = None,
                       training_prompts: Callable[[], list[str]] | None = None) -> CustomRouter:
    """The router of an artefact folder. `training_prompts` gives the prompts it was trained on, in upload order:
    only a router trained on e5 by an earlier version needs them (api/custom_router/legacy.py)."""
    folder = Path(folder)
    spec = json.loads((folder / "router.json").read_text(encoding="utf-8"))
    featurizer = featurizer or Featurizer.load(DEFAULT_ARTEFACT_DIR)
    # Routers trained before the encoder was recorded name only their language (same names as the encoders then).
    name = spec.get("encoder", spec.get("language", ENGLISH))
    if name == LEXICON:
        return CustomRouter(folder, spec, LexiconEncoder(featurizer, Lexicon.load(folder)))
    if name == ENGLISH:
        return CustomRouter(folder, spec, EnglishEncoder(featurizer))
    if name == MULTILINGUAL_E5:
        if training_prompts is None:
            raise FeatureVersionMismatch(f"custom router in {folder} was trained on e5 vectors and its training "
                                         "prompts are not available to migrate it; train it again")
        return CustomRouter(folder, spec, migrated_e5_encoder(folder, training_prompts()))
    raise FeatureVersionMismatch(f"custom router in {folder} names an unknown encoder {name!r}; train it again")
