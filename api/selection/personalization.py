"""Per-preference learning from feedback: a similarity-weighted residual correction of predicted quality, shrunk
by empirical Bayes so that it moves predictions only where the labels agree beyond the noise of a 0/1 label.

For each preference we remember, per model, the feedback points (unit query embedding e_i, residual r_i = y_i - q_i
where y_i is the thumbs up/down and q_i what the router predicted then). For a new query e and candidate m:

    w_i = max(0, (cos(e, e_i) - S0) / (1 - S0)) ** 2                (only similar queries count)
    rbar = sum(w_i r_i) / sum(w_i),  n = sum(w_i) ** 2 / sum(w_i ** 2)  (local mean, its effective count)
    d_m = B (rbar - mu),  B = tau2 / (tau2 + sigma2 / n)                  (if some w_i > 0; shrunk local deviation)
    q'_m = clip(q_m + mu + d_m, 0, 1)                  (if any candidate has similar feedback, else q'_m = q_m)

A candidate with no similar feedback of its own takes d = the other candidates' d, precision-weighted (n).

mu is the model's residual mean over all its feedback (shrunk towards 0 by K pseudo-points). Added to every query
near feedback, it shifts one model against the others by the same amount everywhere, so labels that say only "this
model is right half the time" change the dial's balance between models, not which queries go where. The local
deviation rbar - mu is kept in the proportion B that the data say is signal: sigma2 is the noise of one label (the
residuals' variance within neighbourhoods: a 0/1 label's binomial noise), tau2 how much more the neighbourhoods' means
vary around mu than that noise alone would make them (method of moments over the stored points, leave-one-out).
Random labels give tau2 ~ 0: every query near feedback gets the same shift. Consistent disagreement on one kind of
query among others gives tau2 > 0 and moves that kind. Feedback is bandit (only the chosen model is labelled), so
near a query often only one model has feedback: what it says about the query's difficulty is shared with the others
rather than read as that model being worse there. Queries with no similar feedback are left as the router
predicted, whatever the preference's other feedback says; other preferences are never touched. A new feedback on the
same session replaces the earlier one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace

import numpy as np

# Cosine below which a past query says nothing about this one. Calibrated on the routing embedding (e5-distilled,
# static-e5-128+hand-v3), whose cosines run high: between prompts of different RouteLLM benchmarks the median is
# 0.40 and the 95th percentile 0.69; within one benchmark the median is 0.64. Re-check it when the encoder changes.
S0 = 0.7
K = 2.0           # pseudo-count: two agreeing feedbacks move a model's mean residual about halfway to theirs
MAX_POINTS = 5_000  # per preference and model; the oldest are forgotten first
ESTIMATE_POINTS = 500   # the most recent points the shrinkage strength is estimated on (~10 ms at most)
Z = 2.0  # standard errors of chance spread the neighbourhoods must exceed before any of it counts as signal
REESTIMATE_FRACTION = 10  # re-estimate it once a tenth of the points changed (every change while there are few)


@dataclass(frozen=True)
class _Shrinkage:
    mu: float      # the model's residual mean, shrunk towards 0
    tau2: float    # variance of the neighbourhoods' true residual means around mu
    sigma2: float  # variance of one label around its neighbourhood's mean (noise)


def _kernel(cosines: np.ndarray) -> np.ndarray:
    return np.clip((cosines - S0) / (1.0 - S0), 0.0, None) ** 2


def estimate(matrix: np.ndarray, residuals: np.ndarray) -> _Shrinkage:
    """mu, tau2 and sigma2 from the points themselves, on the most recent ESTIMATE_POINTS of them against each other:
    each point's leave-one-out neighbourhood mean varies around mu by tau2 + sigma2 / n_eff (its effective count),
    and sigma2 is the residuals' variance within neighbourhoods."""
    r = residuals.astype(np.float64)
    mu = float(r.sum() / (K + len(r)))
    x, rx = matrix[-ESTIMATE_POINTS:], r[-ESTIMATE_POINTS:]
    w = _kernel(x @ x.T)
    np.fill_diagonal(w, 0.0)  # leave the point itself out
    total = w.sum(axis=1, dtype=np.float64)
    has = total > 0
    if not has.any():
        return _Shrinkage(mu, 0.0, 1.0)
    w, total = w[has].astype(np.float64), total[has]
    n_eff = total * total / np.einsum("ij,ij->i", w, w)
    local = w @ rx / total
    within = (w @ (rx * rx) / total - local * local) * n_eff / np.maximum(n_eff - 1.0, 1e-9)
    many = n_eff > 1.5  # a variance needs two points
    sigma2 = float(np.average(within[many], weights=n_eff[many] - 1.0)) if many.any() else float(rx.var())
    sigma2 = max(sigma2, 1e-6)
    noise = sigma2 / n_eff  # what noise alone makes each local mean vary by
    excess = float(np.mean((local - mu) ** 2 - noise))
    # Under noise alone the excess is ~0 with a standard error of sqrt(2 / k) times the mean noise (a chi-squared
    # with one degree of freedom per neighbourhood; k: how many distinct neighbourhoods the points make): count only
    # what exceeds two standard errors, so a few neighbourhoods' chance spread does not pass for signal.
    k = max(1.0, float(np.sum(1.0 / (n_eff + 1.0))))
    tau2 = max(0.0, excess - Z * float(np.sqrt(2.0 / k)) * float(noise.mean()))
    return _Shrinkage(mu, tau2, sigma2)


@dataclass
class _ModelPoints:
    by_session: OrderedDict[str, tuple[np.ndarray, float]] = field(default_factory=OrderedDict)
    matrix: np.ndarray | None = None  # cached stack of embeddings, rebuilt lazily after changes
    residuals: np.ndarray | None = None
    shrinkage: _Shrinkage | None = None
    changes: int = 0  # since the shrinkage was estimated

    def add(self, session_id: str, embedding: np.ndarray, residual: float) -> None:
        self.by_session.pop(session_id, None)
        self.by_session[session_id] = (embedding, residual)
        while len(self.by_session) > MAX_POINTS:
            self.by_session.popitem(last=False)
        self.changed()

    def changed(self) -> None:
        self.matrix = None
        self.changes += 1

    def arrays(self) -> tuple[np.ndarray, np.ndarray, _Shrinkage]:
        if self.matrix is None or self.residuals is None or self.shrinkage is None:
            values = list(self.by_session.values())
            self.matrix = np.stack([v[0] for v in values]).astype(np.float32)
            self.residuals = np.array([v[1] for v in values], dtype=np.float32)
            n = len(values)
            if self.shrinkage is None or self.changes * REESTIMATE_FRACTION >= n:
                self.shrinkage, self.changes = estimate(self.matrix, self.residuals), 0
            else:  # the strength is a property of the traffic, slow to move; the mean follows every feedback
                self.shrinkage = replace(self.shrinkage, mu=float(self.residuals.sum(dtype=np.float64) / (K + n)))
        return self.matrix, self.residuals, self.shrinkage


def unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


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
                    points.changed()
            models.setdefault(model_key, _ModelPoints()).add(session_id, unit(embedding), float(label) - predicted)

    def knows(self, preference_id: str | None) -> bool:
        return preference_id is not None and preference_id in self._prefs

    def adjust(self, preference_id: str, embedding: np.ndarray, model_keys: list[str],
               quality: np.ndarray) -> np.ndarray:
        with self._lock:
            models = self._prefs.get(preference_id)
            if not models:
                return quality
            e = unit(embedding)
            n = len(model_keys)
            mean, deviation, precision = np.zeros(n), np.zeros(n), np.zeros(n)
            for i, key in enumerate(model_keys):
                points = models.get(key)
                if points is None or not points.by_session:
                    continue
                matrix, residuals, s = points.arrays()
                mean[i] = s.mu
                w = _kernel(matrix @ e)
                total = float(w.sum())
                if total > 0:
                    local = float(w @ residuals) / total
                    precision[i] = total * total / float(w @ w)  # the effective count of similar feedback
                    deviation[i] = s.tau2 / (s.tau2 + s.sigma2 / precision[i]) * (local - s.mu)
            if not precision.any():
                return quality  # no similar feedback for any candidate: as the router predicted
            # Bandit feedback labels only the model chosen, so near this query some models may have no feedback.
            # They take the precision-weighted deviation of those that have: what labels say about how hard this
            # kind of query is moves every model alike, and only a difference between models moves the choice.
            shared = float(precision @ deviation / precision.sum())
            deviation = np.where(precision > 0, deviation, shared)
            return np.clip(np.asarray(quality, dtype=np.float64) + mean + deviation, 0.0, 1.0)

    def forget(self, preference_id: str) -> None:
        with self._lock:
            self._prefs.pop(preference_id, None)
