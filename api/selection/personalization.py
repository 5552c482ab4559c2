"""Per-preference learning from feedback: a similarity-weighted residual correction of predicted quality.

For each preference we remember, per model, the feedback points (unit query embedding e_i, residual r_i = y_i - q_i
where y_i is the thumbs up/down and q_i what the router predicted then). For a new query e and candidate m:

    w_i = max(0, (cos(e, e_i) - S0) / (1 - S0)) ** 2          (only similar queries count)
    q'_m = clip(q_m + sum(w_i r_i) / (K + sum(w_i)), 0, 1)    (K: prior strength, shrinks towards the router)

So consistent thumbs-down on one model and thumbs-up on another for a kind of query moves the choice for similar
queries, leaves dissimilar queries alone, and never touches another preference. A new feedback on the same
session replaces the earlier one. r_i is measured against the router's own prediction (before any correction), the
quantity the learn-from-traffic flow corrects too.

The memory is fed by every feedback, but the service applies it to a preference only while the flow has promoted it
(a learned version with `nearest_neighbour_residual`, api/selection/learned.py): the flow evaluates it like any
challenger, off-policy on the preference's most recent labels (flows/learning/learn.py), because ungated it moved
routing on every feedback and random labels cost it 0.09-0.13 APGR through the service (docs/benchmarks.md,
"Issue 23"). Once promoted it is the fast path between retrains: each new feedback moves it at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

# Cosine below which a past query says nothing about this one. Calibrated on the routing embedding (e5-distilled,
# static-e5-128+hand-v3), whose cosines run high: between prompts of different RouteLLM benchmarks the median is
# 0.40 and the 95th percentile 0.69; within one benchmark the median is 0.64. Re-check it when the encoder changes.
S0 = 0.7
K = 2.0           # pseudo-count: two similar agreeing feedbacks move quality about halfway to the observed label
MAX_POINTS = 5_000  # per preference and model; the oldest are forgotten first


@dataclass
class _ModelPoints:
    by_session: OrderedDict[str, tuple[np.ndarray, float]] = field(default_factory=OrderedDict)
    matrix: np.ndarray | None = None  # cached stack of embeddings, rebuilt lazily after changes
    residuals: np.ndarray | None = None

    def add(self, session_id: str, embedding: np.ndarray, residual: float) -> None:
        self.by_session.pop(session_id, None)
        self.by_session[session_id] = (embedding, residual)
        while len(self.by_session) > MAX_POINTS:
            self.by_session.popitem(last=False)
        self.matrix = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self.matrix is None:
            values = list(self.by_session.values())
            self.matrix = np.stack([v[0] for v in values]).astype(np.float32)
            self.residuals = np.array([v[1] for v in values], dtype=np.float32)
        assert self.residuals is not None
        return self.matrix, self.residuals


def unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


def _shift(points: _ModelPoints, unit_rows: np.ndarray, chunk: int = 2_048) -> np.ndarray:
    """sum(w_i r_i) / (K + sum(w_i)) for each unit row (the formula above), in chunks: a flow evaluates thousands of
    queries against up to MAX_POINTS points."""
    matrix, residuals = points.arrays()
    out = np.zeros(len(unit_rows))
    for start in range(0, len(unit_rows), chunk):
        w = np.clip((unit_rows[start:start + chunk] @ matrix.T - S0) / (1.0 - S0), 0.0, None) ** 2
        out[start:start + chunk] = (w @ residuals) / (K + w.sum(axis=1))
    return out


class FeedbackMemory:
    def __init__(self) -> None:
        self._prefs: dict[str, dict[str, _ModelPoints]] = {}
        self._lock = threading.Lock()

    def add(self, preference_id: str, session_id: str, model_key: str, embedding: np.ndarray, label: int,
            predicted: float) -> None:
        with self._lock:
            models = self._prefs.setdefault(preference_id, {})
            # A session's feedback is about one model; drop an earlier entry for it under any model.
            for points in models.values():
                if session_id in points.by_session:
                    points.by_session.pop(session_id)
                    points.matrix = None
            models.setdefault(model_key, _ModelPoints()).add(session_id, unit(embedding), float(label) - predicted)

    def knows(self, preference_id: str | None) -> bool:
        return preference_id is not None and preference_id in self._prefs

    def adjust(self, preference_id: str, embedding: np.ndarray, model_keys: list[str],
               quality: np.ndarray) -> np.ndarray:
        with self._lock:
            models = self._prefs.get(preference_id)
            if not models:
                return quality
            e = unit(embedding)[None, :]
            adjusted = np.array(quality, dtype=np.float64)
            for i, key in enumerate(model_keys):
                points = models.get(key)
                if points is not None and points.by_session:
                    adjusted[i] += float(_shift(points, e)[0])
            return np.clip(adjusted, 0.0, 1.0)

    def shifts(self, preference_id: str, model_key: str, embeddings: np.ndarray) -> np.ndarray:
        """The shift of `model_key`'s predicted quality for each row of `embeddings` (unit rows), before clipping:
        the flow's off-policy evaluation of the memory, many queries at once."""
        with self._lock:
            points = self._prefs.get(preference_id, {}).get(model_key)
            if points is None or not points.by_session:
                return np.zeros(len(embeddings))
            return _shift(points, np.asarray(embeddings, dtype=np.float32))

    def forget(self, preference_id: str) -> None:
        with self._lock:
            self._prefs.pop(preference_id, None)
