"""A prompt's nearest training prompts, as the floor reads them: how familiar the prompt is, and what its
neighbours scored.

One product of the query's unit kNN features with the router's stored training prompts (the rows the kNN head
already keeps, api/custom_router/model.py) gives both, once per request:
- familiarity(x): the mean cosine similarity of the NEIGHBOURS nearest training prompts. A prompt of a kind the
  upload contains sits close to many of its rows; a kind the upload never showed sits far from all of them;
- sums(x), count(x): the summed observed quality of those neighbours per model, which the floor may blend into
  its cluster means (api/custom_router/floor.py, `local_prior`).
Training computes the same quantities cross-fitted (flows/custom_router/neighbours.py): a row never sees itself or
its own fold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEIGHBOURS = 10


@dataclass(frozen=True)
class Neighbourhood:
    sums: np.ndarray  # (n, M) summed observed quality of each row's nearest training prompts
    count: np.ndarray  # (n,) how many neighbours were summed (NEIGHBOURS, fewer on tiny uploads)
    familiarity: np.ndarray  # (n,) mean cosine similarity to them


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def nearest(sims: np.ndarray, targets: np.ndarray, k: int = NEIGHBOURS) -> Neighbourhood:
    """The neighbourhood of each query row from its cosine similarities to reference rows. sims: (n, r);
    targets: (r, M) the reference rows' observed quality."""
    k = min(k, sims.shape[1])
    if k == 0:
        n = sims.shape[0]
        return Neighbourhood(np.zeros((n, targets.shape[1])), np.zeros(n), np.full(n, -1.0))
    idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    top = np.take_along_axis(sims, idx, axis=1)
    return Neighbourhood(targets[idx].sum(axis=1).astype(np.float64), np.full(len(sims), float(k)),
                         top.mean(axis=1).astype(np.float64))


class References:
    """A router's training prompts as the floor compares a new prompt with them (serving). Keeps the router's own
    array of them (no unit copy: a router holds thousands of rows) and their inverse norms."""

    def __init__(self, embeddings: np.ndarray, targets: np.ndarray):
        self.rows = np.asarray(embeddings, dtype=np.float32)  # (r, e), the kNN head's array when it is float32
        self.inverse_norms = (1.0 / np.maximum(np.linalg.norm(self.rows, axis=1), 1e-12)).astype(np.float32)
        self.targets = np.asarray(targets, dtype=np.float64)  # (r, M)

    def around(self, emb: np.ndarray) -> Neighbourhood:
        """The neighbourhood of one query's kNN features (e,)."""
        return nearest(((self.rows @ unit(emb)) * self.inverse_norms)[None, :], self.targets)
