"""Lexical features of a prompt for the learner of a preference's traffic (issue 33): hashed word unigrams and
bigrams and character 3- to 5-grams, one definition for the learn-from-traffic flow (fitting) and the decision path
(serving).

Why: the router's 128-d static embedding places prompts by topic, and a model's failures on a kind of prompt it
already handles on average do not line up with topic (with both models' outcomes on every MMLU prompt, a correction
on the embedding gained +0.05 at most). Which words and word pieces a prompt contains separates them better: a TF-IDF
word/bigram logistic regression fitted on the same bandit labels gained +0.057 on the issue's protocol.

Nothing is kept as text: a prompt becomes a sparse vector of hashed indices (2^20 buckets), and a fitted model keeps
weights by index only. Words and bigrams are hashed with CRC-32 (deterministic across processes, unlike hash());
character n-grams with a polynomial rolling hash over the code points, computed for all positions at once with numpy
(tens of microseconds for a long prompt). Counts are damped (1 + log count) and each of the two blocks, words and
characters, is scaled to unit length, so a long prompt weighs no more than a short one. Only the first MAX_CHARS
characters are read, which bounds the cost on the request path.
"""

from __future__ import annotations

import base64
import re
import zlib

import msgspec
import numpy as np

FEATURE_VERSION = "lexical-hash-v1"
BITS = 20
DIM = 1 << BITS
MAX_CHARS = 4_000
CHAR_NGRAMS = (3, 4, 5)
_WORD = re.compile(r"\w+")
_PRIME = np.uint64(1_000_003)
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the top bits of h * golden ratio spread evenly
_SHIFT = np.uint64(64 - BITS)
_MASK32 = np.uint64(0xFFFFFFFF)


def _words(text: str) -> np.ndarray:
    words = _WORD.findall(text)
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    return np.fromiter((zlib.crc32(g.encode("utf-8")) for g in grams), dtype=np.uint64, count=len(grams))


def _chars(text: str) -> np.ndarray:
    codes = np.frombuffer(f" {text} ".encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    out = []
    for n in CHAR_NGRAMS:
        if len(codes) < n:
            continue
        h = np.full(len(codes) - n + 1, n, dtype=np.uint64)  # the length seeds the hash: "abc" is not "abcd"[:3]
        for j in range(n):
            h = (h * _PRIME + codes[j: len(codes) - n + 1 + j]) & _MASK32
        out.append(h)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint64)


def _block(hashes: np.ndarray, salt: int) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique indices, damped counts scaled to unit length) of one block of hashes."""
    if len(hashes) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    index = (((hashes + np.uint64(salt)) * _MIX) >> _SHIFT).astype(np.int64)
    unique, counts = np.unique(index, return_counts=True)
    values = 1.0 + np.log(counts)
    return unique, values / np.linalg.norm(values)


def featurize(text: str) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values) of the prompt's sparse lexical vector: indices sorted, unique, in 0..DIM-1."""
    text = text[:MAX_CHARS].lower()
    wi, wv = _block(_words(text), 0)
    ci, cv = _block(_chars(text), 0x5BD1E995)
    index = np.concatenate([wi, ci])
    values = np.concatenate([wv, cv]) / np.sqrt(2.0)  # both blocks present: unit length overall
    order = np.argsort(index, kind="stable")
    index, values = index[order], values[order]
    unique, start = np.unique(index, return_index=True)  # a word and an n-gram may share a bucket: add them
    return unique, np.add.reduceat(values, start) if len(values) else values


class SparseWeights:
    """One model's weights by hashed index, sorted: a prompt's score is a sparse dot product (a binary search of the
    prompt's few hundred indices among the model's), so memory grows with what was learned, not with DIM."""

    def __init__(self, index: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(index, kind="stable")
        self.index = np.asarray(index, dtype=np.int64)[order]
        self.values = np.asarray(values, dtype=np.float64)[order]

    def dot(self, index: np.ndarray, values: np.ndarray) -> float:
        if len(self.index) == 0 or len(index) == 0:
            return 0.0
        at = np.searchsorted(self.index, index)
        at_clipped = np.minimum(at, len(self.index) - 1)
        hit = self.index[at_clipped] == index
        return float(self.values[at_clipped[hit]] @ values[hit])


class LexicalParameters(msgspec.Struct, frozen=True):
    """The stored form of a fitted lexical learner (flows/learning/lexical_fit.py), inside a learned version's
    parameters. Weights are kept by hashed index only (base64 little-endian int32 indices and float32 values)."""

    feature_version: str
    models: list[str]              # provider/model keys
    intercept: list[float]         # b_m
    index: list[str]               # per model: base64 int32 bucket indices
    values: list[str]              # per model: base64 float32 weights on those buckets
    embedding: list[list[float]]   # per model: weights on the router's unit embedding
    centroids: list[list[float]]   # unit centroids of the training prompts' embeddings
    familiar: float                # a prompt whose cosine to every centroid is below this keeps the router's q
    familiar_full: float | None = None  # from this cosine on it takes the whole adjustment, a linear share between
                                        # (None, as fitted before the ramp: the whole adjustment from `familiar`)
    serve_intercept: bool = True   # add b_m when serving (versions fitted before the ramp); see LexicalModel


def encode_array(values: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def decode_array(text: str, dtype: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype)


class LexicalModel:
    """Serving form: quality_m = clip(q_m + s(x) * (lexical(x) . w_m + unit embedding . e_m), 0, 1) for the models
    it was fitted on; s(x), how familiar the prompt is, is 0 when its unit embedding's cosine to the nearest training
    centroid is below `familiar`, 1 from `familiar_full` on, linear between (flows/learning/lexical_fit.py says why).
    Other models and unfamiliar prompts keep the router's q. One hashing of the prompt and a sparse dot product per
    known candidate.

    The model's mean residual b_m is fitted (the prompt-level part is learned around it, and the gate judges both
    calibrated) but not served: the dial calibrates lambda on the caller's own decisions, so a per-model level moves
    nothing a caller of one kind can see, while on prompts partly familiar it moves one kind's gaps against another's.
    Served, it cost a kind without feedback up to 0.019 APGR and, on random labels, the kind they came from up to
    0.041 as fitted (seeds 0-1 of GSM8K and MMLU); the prompt-level part alone kept the judged gain (+0.051 mean).
    Versions fitted before that (`serve_intercept`) still add it, all or nothing at `familiar`."""

    def __init__(self, p: LexicalParameters) -> None:
        if p.feature_version != FEATURE_VERSION:  # docs/architecture.md, rule 4
            raise ValueError(f"lexical features {p.feature_version} are not {FEATURE_VERSION}")
        if not (len(p.models) == len(p.intercept) == len(p.index) == len(p.values) == len(p.embedding)):
            raise ValueError("lexical parameters are not aligned")
        self.rows = {m: i for i, m in enumerate(p.models)}
        self.intercept = np.asarray(p.intercept, dtype=np.float64) if p.serve_intercept else np.zeros(len(p.models))
        self.weights = [SparseWeights(decode_array(i, "<i4"), decode_array(v, "<f4"))
                        for i, v in zip(p.index, p.values)]
        self.embedding = [np.asarray(e, dtype=np.float64) for e in p.embedding]
        self.centroids = np.asarray(p.centroids, dtype=np.float64).reshape(len(p.centroids), -1)
        self.familiar = float(p.familiar)
        self.familiar_full = self.familiar if p.familiar_full is None else max(float(p.familiar_full), self.familiar)

    def familiarity(self, unit_embedding: np.ndarray) -> float:
        """s(x) of the class docstring: 0 (the router alone) to 1 (the whole adjustment)."""
        if not len(self.centroids):
            return 0.0
        cosine = float((self.centroids @ unit_embedding).max())
        if cosine < self.familiar:
            return 0.0
        if cosine >= self.familiar_full:
            return 1.0
        return (cosine - self.familiar) / (self.familiar_full - self.familiar)

    def apply(self, text: str, embedding: np.ndarray, keys: list[str], quality: np.ndarray) -> np.ndarray:
        out = np.asarray(quality, dtype=np.float64).copy()
        known = [(i, self.rows[k]) for i, k in enumerate(keys) if k in self.rows]
        if not known:
            return out
        e = np.asarray(embedding, dtype=np.float64)[: self.centroids.shape[1]]
        norm = float(np.linalg.norm(e))
        e = e / norm if norm > 0 else e
        share = self.familiarity(e)
        if share <= 0.0:
            return out
        index, values = featurize(text)
        for i, m in known:
            out[i] += share * (self.intercept[m] + self.weights[m].dot(index, values) + float(e @ self.embedding[m]))
        return np.clip(out, 0.0, 1.0)
