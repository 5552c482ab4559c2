"""Evaluate XGBoost tree ensembles from their JSON model files with numpy: no xgboost import on the hot path.

All trees of all models are flattened into one node table with global child indices, so one query walks every
tree at once: `depth` rounds of vectorised gathers (tens of microseconds for a few thousand trees). Semantics
follow XGBoost: go left when x[feature] < threshold, missing values (NaN) follow `default_left`, a leaf's value
sits in `split_conditions`, and the margin is the sum of leaves plus the model's base margin.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _base_score(raw: object) -> float:
    # XGBoost 2 writes "5E-1"; 3.x writes "[5E-1]" (a vector for multi-target models): take the first number.
    match = _NUMBER.search(str(raw))
    return float(match.group(0)) if match else 0.5


def read_booster(path: Path) -> tuple[list[dict], float, str]:
    """(trees, base margin, objective name) of an XGBoost JSON model file."""
    model = json.loads(Path(path).read_text(encoding="utf-8"))
    learner = model["learner"]
    objective = learner["objective"]["name"]
    base = _base_score(learner["learner_model_param"]["base_score"])
    if objective in ("reg:logistic", "binary:logistic"):
        base = math.log(base / (1.0 - base)) if 0.0 < base < 1.0 else 0.0
    return learner["gradient_booster"]["model"]["trees"], base, objective


class TreeEnsembles:
    """Several boosters (one group each) evaluated together. predict(x) -> one margin per group."""

    def __init__(self, groups: list[list[Path]]):
        left, right, feat, cond, dleft, roots, owner = [], [], [], [], [], [], []
        self.base = np.zeros(len(groups))
        self.members = np.zeros(len(groups))
        self.logistic = np.zeros(len(groups), dtype=bool)
        offset, depth = 0, 1
        for g, paths in enumerate(groups):
            for path in paths:  # several boosters in a group are averaged (cross-validation fold models)
                trees, base, objective = read_booster(path)
                self.base[g] += base
                self.members[g] += 1
                self.logistic[g] = objective in ("reg:logistic", "binary:logistic")
                for tree in trees:
                    lc = np.asarray(tree["left_children"], dtype=np.int64)
                    rc = np.asarray(tree["right_children"], dtype=np.int64)
                    leaf = lc < 0
                    left.append(np.where(leaf, np.arange(len(lc)), lc) + offset)  # leaves point at themselves
                    right.append(np.where(leaf, np.arange(len(lc)), rc) + offset)
                    feat.append(np.where(leaf, 0, np.asarray(tree["split_indices"], dtype=np.int64)))
                    cond.append(np.asarray(tree["split_conditions"], dtype=np.float64))
                    dleft.append(np.asarray(tree["default_left"], dtype=bool))
                    roots.append(offset)
                    owner.append(g)
                    depth = max(depth, _depth(lc, rc))
                    offset += len(lc)
        self.left = np.concatenate(left) if left else np.zeros(0, np.int64)
        self.right = np.concatenate(right) if right else np.zeros(0, np.int64)
        self.feature = np.concatenate(feat) if feat else np.zeros(0, np.int64)
        # XGBoost stores thresholds as float32 and compares in float32; with histogram splits a threshold is often
        # exactly a training value, so comparing in float64 would send those values the wrong way.
        self.threshold = (np.concatenate(cond) if cond else np.zeros(0)).astype(np.float32)
        self.default_left = np.concatenate(dleft) if dleft else np.zeros(0, bool)
        self.roots = np.asarray(roots, dtype=np.int64)
        self.owner = np.asarray(owner, dtype=np.int64)
        self.depth = depth
        self.groups = len(groups)

    def margins(self, x: np.ndarray) -> np.ndarray:
        """Mean over each group's boosters of (base margin + sum of leaf values)."""
        node = self.roots.copy()
        for _ in range(self.depth):
            value = x[self.feature[node]]
            go_left = np.where(np.isnan(value), self.default_left[node], value < self.threshold[node])
            node = np.where(go_left, self.left[node], self.right[node])
        sums = np.bincount(self.owner, weights=self.threshold[node].astype(np.float64), minlength=self.groups)
        return (sums + self.base) / np.maximum(self.members, 1)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Probabilities for logistic groups (sigmoid of the averaged margin), raw margins otherwise."""
        m = self.margins(np.asarray(x, dtype=np.float32))
        return np.where(self.logistic, 1.0 / (1.0 + np.exp(-m)), m)


def _depth(left: np.ndarray, right: np.ndarray) -> int:
    depth, frontier = 0, [0]
    while frontier:
        nxt = [c for n in frontier for c in (left[n], right[n]) if c >= 0]
        depth += 1 if nxt else 0
        frontier = nxt
    return max(depth, 1)
