"""A router's own static text embedding, in any language: one vector per token of the upload, averaged.

Why: modelSelect has a budget of a few milliseconds, and multilingual-e5-small costs tens of milliseconds per query
on a free core (and hundreds under load). e5 is affordable only at training time, as a teacher: the training flow
embeds part of the upload with e5 (flows/custom_router/teacher.py) and fits a vector per token so that the mean of
a prompt's token vectors reproduces its e5 vector (ridge regression, as the default router's English table was
distilled: flows/default_router/distill_e5.py). Serving then costs a regular-expression pass and a mean of rows:
tens of microseconds, whatever the script.

Tokens are language-agnostic and need no vocabulary file: lower-cased words of letters and digits, and for scripts
written without spaces (Chinese, Japanese kana, Korean) every character and every pair of neighbouring characters.
Only tokens seen in at least two teacher prompts get a row; the others are ignored (a prompt made only of unseen
tokens gets the zero vector, and the router then relies on the rest of its features).

Artefact: `lexicon_tokens.json` (the token of each row) and `lexicon.npy` (float16 rows). Numpy only: loaded by the
API, fitted by the training flow and by the migration of routers trained on e5 (api/custom_router/legacy.py).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from api.routing.features import embedding_window

# Han (with extension A and compatibility ideographs), hiragana and katakana, Hangul syllables.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[^\W_{_UNSPACED}]+")
_UNSPACED_RUN = re.compile(rf"[{_UNSPACED}]+")
MIN_PROMPTS = 2  # a token needs this many teacher prompts to get a row: one prompt's tokens would only memorise it
RIDGE_LAMBDA = 0.1  # as the default router's table (flows/default_router/distill_e5.py)
TOKENS_FILE, MATRIX_FILE = "lexicon_tokens.json", "lexicon.npy"


def lexicon_tokens(text: str) -> list[str]:
    """The tokens of a prompt (the window the default router's embedding reads), as a bag: words first, then the
    characters and character pairs of each unspaced run."""
    window = embedding_window(text).lower()
    out = _WORD.findall(window)
    for run in _UNSPACED_RUN.findall(window):
        out.extend(run)
        out.extend(run[i:i + 2] for i in range(len(run) - 1))
    return out


def hash_order(prompts: Sequence[str]) -> list[int]:
    """Row indices in the order of a hash of their prompt: a fixed pseudo-random order, stable under re-ordering of
    the upload, whose every prefix is a fair mix of its kinds of prompt (the teacher's and the migration's samples)."""
    return sorted(range(len(prompts)),
                  key=lambda i: hashlib.sha256(prompts[i].encode("utf-8", "surrogatepass")).digest())


def _rows(tokens: list[str], index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(row ids, share of the prompt's known tokens) of one prompt."""
    ids = np.fromiter((index[t] for t in tokens if t in index), dtype=np.int64)
    if len(ids) == 0:
        return ids, np.zeros(0)
    uniq, counts = np.unique(ids, return_counts=True)
    return uniq, counts / len(ids)


class Lexicon:
    """tokens[i] -> matrix[i]; encode(text) = L2-normalised mean of the rows of its known tokens."""

    def __init__(self, tokens: Sequence[str], matrix: np.ndarray):
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.dim = int(self.matrix.shape[1])

    def encode(self, text: str) -> np.ndarray:
        index = self.index
        ids = [index[t] for t in lexicon_tokens(text) if t in index]
        if not ids:
            return np.zeros(self.dim, np.float32)
        v = self.matrix[ids].sum(axis=0)  # the share-weighted mean up to a factor the normalisation removes
        norm = float(np.sqrt(v @ v))
        return v / norm if norm > 0 else v

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.encode(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def save(self, folder: Path) -> None:
        (folder / TOKENS_FILE).write_text(json.dumps(self.tokens, ensure_ascii=False), encoding="utf-8")
        np.save(folder / MATRIX_FILE, self.matrix.astype(np.float16))

    @classmethod
    def load(cls, folder: Path) -> Lexicon:
        return cls(json.loads((folder / TOKENS_FILE).read_text(encoding="utf-8")), np.load(folder / MATRIX_FILE))


def fit_lexicon(prompts: Sequence[str], targets: np.ndarray, lam: float = RIDGE_LAMBDA,
                column_chunk: int = 4096) -> Lexicon:
    """Token rows W minimising ||B W - targets||^2 + lam ||W||^2, B = each prompt's token shares (rows sum to 1, so
    a prompt's mean of rows is its row of B W). Solved in the dual, W = B^T (B B^T + lam I)^-1 targets: the teacher
    set (hundreds to a few thousand prompts) is far smaller than its vocabulary. Dense numpy in column chunks, so
    the API can run it too (no scipy on the serving side)."""
    tokenised = [lexicon_tokens(p) for p in prompts]
    seen: dict[str, int] = {}
    for toks in tokenised:
        for t in set(toks):
            seen[t] = seen.get(t, 0) + 1
    vocab = sorted(t for t, c in seen.items() if c >= MIN_PROMPTS)
    index = {t: i for i, t in enumerate(vocab)}
    rows = [_rows(toks, index) for toks in tokenised]
    n, targets = len(prompts), np.asarray(targets, dtype=np.float64)
    gram = np.zeros((n, n))
    for start in range(0, len(vocab), column_chunk):
        block = _dense_block(rows, start, min(start + column_chunk, len(vocab)))
        gram += block @ block.T
    gram[np.diag_indices_from(gram)] += lam
    dual = np.linalg.solve(gram, targets)
    matrix = np.zeros((len(vocab), targets.shape[1]), np.float32)
    for start in range(0, len(vocab), column_chunk):
        stop = min(start + column_chunk, len(vocab))
        matrix[start:stop] = _dense_block(rows, start, stop).T @ dual
    return Lexicon(vocab, matrix)


def _dense_block(rows: list[tuple[np.ndarray, np.ndarray]], start: int, stop: int) -> np.ndarray:
    """Columns start..stop of the token-share matrix, dense (n, stop - start)."""
    block = np.zeros((len(rows), stop - start))
    for i, (ids, shares) in enumerate(rows):
        inside = (ids >= start) & (ids < stop)
        block[i, ids[inside] - start] = shares[inside]
    return block
