"""Cross-fitted neighbourhoods of the training rows (api/custom_router/neighbours.py serves the same quantities).

Cross-validation must never let a row see itself, its own fold, or a fold held out around it. Every row's POOL
nearest other rows are found once (one chunked product of the rows with themselves); a neighbourhood that excludes
some folds takes the first NEIGHBOURS of them outside those folds. With five folds and two excluded, about 29 of
the 48 remain; with three folds and two excluded, about 16: enough for NEIGHBOURS = 10 on any upload large enough
to cross-validate.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from api.custom_router.neighbours import NEIGHBOURS, Neighbourhood, nearest, unit

POOL = 48
CHUNK = 1024


class NeighbourTable:
    """`similarity(start, stop)`: the rows start..stop against all rows; default the cosine of `emb` (what serving
    computes; benchmarks/custom_router_unfamiliar.py tries other measures)."""

    def __init__(self, emb: np.ndarray, y: np.ndarray, folds: np.ndarray,
                 similarity: Callable[[int, int], np.ndarray] | None = None):
        self.emb, self.y, self.folds = unit(emb), np.asarray(y, dtype=np.float64), np.asarray(folds)
        similarity = similarity or (lambda start, stop: self.emb[start:stop] @ self.emb.T)
        n = len(self.emb)
        pool = min(POOL, max(n - 1, 1))
        self.index = np.zeros((n, pool), dtype=np.int64)
        self.sims = np.full((n, pool), -np.inf, dtype=np.float32)
        for start in range(0, n, CHUNK):
            sims = np.asarray(similarity(start, min(start + CHUNK, n)), dtype=np.float32)
            rows = np.arange(start, min(start + CHUNK, n))
            sims[rows - start, rows] = -np.inf  # never itself
            idx = np.argpartition(-sims, pool - 1, axis=1)[:, :pool]
            top = np.take_along_axis(sims, idx, axis=1)
            order = np.argsort(-top, axis=1, kind="stable")
            self.index[rows], self.sims[rows] = np.take_along_axis(idx, order, 1), np.take_along_axis(top, order, 1)

    def among(self, rows: np.ndarray, excluded: np.ndarray | list) -> Neighbourhood:
        """The neighbourhoods of `rows` (indices) among the rows whose fold is not in `excluded`."""
        idx, sims = self.index[rows], self.sims[rows]
        usable = ~np.isin(self.folds[idx], np.asarray(excluded)) & np.isfinite(sims)
        taken = usable & (np.cumsum(usable, axis=1) <= NEIGHBOURS)
        count = taken.sum(axis=1).astype(np.float64)
        sums = np.einsum("rk,rkm->rm", taken.astype(np.float64), self.y[idx])
        familiarity = np.where(count > 0, (np.where(taken, sims, 0.0)).sum(axis=1) / np.maximum(count, 1), -1.0)
        return Neighbourhood(sums, count, familiarity)

    def own_fold_out(self, rows: np.ndarray | None = None) -> Neighbourhood:
        """Each row's neighbourhood outside its own fold (what serving sees of a prompt like it, less one fold)."""
        rows = np.arange(len(self.y)) if rows is None else rows
        parts = [(r, self.among(r, [f])) for f in np.unique(self.folds[rows]) for r in [rows[self.folds[rows] == f]]]
        return stack(len(self.y), self.y.shape[1], parts, rows)


def stack(n: int, m: int, parts: list[tuple[np.ndarray, Neighbourhood]], rows: np.ndarray) -> Neighbourhood:
    """One Neighbourhood for `rows` (in their order) from per-subset parts keyed by global row index."""
    sums, count, fam = np.zeros((n, m)), np.zeros(n), np.zeros(n)
    for r, part in parts:
        sums[r], count[r], fam[r] = part.sums, part.count, part.familiarity
    return Neighbourhood(sums[rows], count[rows], fam[rows])


def outside(emb_rows: np.ndarray, emb_refs: np.ndarray, y_refs: np.ndarray) -> Neighbourhood:
    """Neighbourhoods of rows among other, disjoint rows (a left-out group against the rest): a direct product."""
    refs = unit(emb_refs)
    parts = [nearest(unit(emb_rows[s:s + CHUNK]) @ refs.T, y_refs) for s in range(0, len(emb_rows), CHUNK)]
    if not parts:
        return Neighbourhood(np.zeros((0, y_refs.shape[1])), np.zeros(0), np.zeros(0))
    return Neighbourhood(np.concatenate([p.sums for p in parts]), np.concatenate([p.count for p in parts]),
                         np.concatenate([p.familiarity for p in parts]))
