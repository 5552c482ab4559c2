"""RouteLLM's router metrics (PGR, APGR, CPT) in plain numpy, reusable by the offline and the HTTP benchmarks.

Definitions follow the data card of ../shared/data/routellm (and RouteLLM's evals/evaluate.py):
- a routing curve is a set of points (share of calls sent to the strong model, benchmark score);
- PGR(score) = (score - weak) / (strong - weak), weak/strong being the scores of always-weak / always-strong;
- APGR = (AUC(curve) - AUC(weak)) / (AUC(strong) - AUC(weak)), AUCs by the trapezoid rule over the curve's own share
  range (0..1 when the sweep reaches both ends);
- CPT(x) = the strong-call share at which the linearly interpolated curve first reaches PGR x. RouteLLM calls
  np.interp(target, scores, shares), which equals this whenever the curve rises monotonically; for curves that dip
  we take the first crossing, which np.interp is not defined for.

A benchmark item carries one number per model: 0/1 correctness (MMLU, GSM8K) or a judge score (MT-Bench, averaged
over the question's turns). Scores are means over items, in the data's own unit (we do not rescale to percent).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "Curve",
    "RoutingMetrics",
    "apgr",
    "closed_at_strong",
    "cpt",
    "curve_from_choices",
    "oracle_curve",
    "pgr",
    "random_curve",
    "summarize",
    "threshold_curve",
]


@dataclass(frozen=True)
class Curve:
    """Routing curve: strong-call shares in [0, 1] (ascending) and the benchmark score at each."""

    shares: np.ndarray
    scores: np.ndarray

    @staticmethod
    def of(shares, scores) -> "Curve":
        s = np.asarray(shares, dtype=float)
        y = np.asarray(scores, dtype=float)
        if s.shape != y.shape or s.ndim != 1 or len(s) < 2:
            raise ValueError("a curve needs at least two (share, score) points of equal length")
        # Stable sort keeps the sweep order for equal shares, as pandas' sort_values does in RouteLLM.
        order = np.argsort(s, kind="stable")
        return Curve(s[order], y[order])


@dataclass(frozen=True)
class RoutingMetrics:
    apgr: float
    cpt50: float  # share of strong calls (0..1) needed for PGR 0.5; nan if never reached
    cpt80: float
    auc: float

    def as_dict(self) -> dict[str, float]:
        return {"apgr": self.apgr, "cpt50": self.cpt50, "cpt80": self.cpt80, "auc": self.auc}


def pgr(score: float, weak: float, strong: float) -> float:
    """Performance gap recovered by one operating point (nan when the two models score the same)."""
    return (score - weak) / (strong - weak) if strong != weak else float("nan")


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0))


def apgr(curve: Curve, weak: float, strong: float) -> float:
    """Average performance gap recovered: normalised area under the curve, RouteLLM's formula."""
    auc = _trapezoid(curve.scores, curve.shares)
    span = float(curve.shares[-1] - curve.shares[0])
    weak_auc, strong_auc = weak * span, strong * span
    if strong_auc == weak_auc:
        return float("nan")  # no gap to recover (e.g. a tiny sample where both models score the same)
    return (auc - weak_auc) / (strong_auc - weak_auc)


def cpt(curve: Curve, weak: float, strong: float, target_pgr: float) -> float:
    """Call-performance threshold: smallest strong-call share whose interpolated PGR reaches `target_pgr`."""
    target = weak + target_pgr * (strong - weak)
    s, y = curve.shares, curve.scores
    if y[0] >= target:
        return float(s[0])
    for i in range(1, len(s)):
        if y[i] >= target:
            # Linear interpolation between the last point below and this one.
            if y[i] == y[i - 1]:
                return float(s[i])
            frac = (target - y[i - 1]) / (y[i] - y[i - 1])
            return float(s[i - 1] + frac * (s[i] - s[i - 1]))
    return float("nan")


def summarize(curve: Curve, weak: float, strong: float) -> RoutingMetrics:
    auc = _trapezoid(curve.scores, curve.shares)
    return RoutingMetrics(
        apgr=apgr(curve, weak, strong),
        cpt50=cpt(curve, weak, strong, 0.5),
        cpt80=cpt(curve, weak, strong, 0.8),
        auc=auc,
    )


def curve_from_choices(choose_strong: np.ndarray, strong_item: np.ndarray, weak_item: np.ndarray) -> Curve:
    """Curve of a sweep: `choose_strong[k, i]` says whether operating point k sends item i to the strong model."""
    choose = np.asarray(choose_strong, dtype=bool)
    if choose.ndim != 2:
        raise ValueError("choose_strong must be (operating points, items)")
    strong_item = np.asarray(strong_item, dtype=float)
    weak_item = np.asarray(weak_item, dtype=float)
    shares = choose.mean(axis=1)
    scores = np.where(choose, strong_item[None, :], weak_item[None, :]).mean(axis=1)
    return Curve.of(shares, scores)


def closed_at_strong(curve: Curve, strong: float) -> Curve:
    """The curve completed with always-strong at share 1 when its own sweep stops short of it.

    A router whose quality-first setting already sends some calls to the weak model (because it predicts the weak
    one will do as well there) never reaches share 1 itself; over its own range APGR then drops the right end of
    the curve, which is where a good router is best, and ranks it below a router that needed every call to reach
    the same score. Always-strong is a point every router can offer (RouteLLM's threshold sweep ends there), so the
    AUC is taken over the full 0..1 range like RouteLLM's.
    """
    if curve.shares[-1] >= 1.0:
        return curve
    return Curve.of(np.append(curve.shares, 1.0), np.append(curve.scores, strong))


def threshold_curve(
    router_scores: np.ndarray, strong_item: np.ndarray, weak_item: np.ndarray, num_results: int = 10
) -> Curve:
    """RouteLLM's sweep: cut the router's strong-win scores at `num_results` quantile bins (num_results + 1 points).

    Point i sends an item to the strong model when its score >= threshold i, except the last, which uses '>'
    (so it sends nothing, or only scores above the maximum).
    """
    r = np.asarray(router_scores, dtype=float)
    thresholds = np.quantile(r, np.linspace(0.0, 1.0, num_results + 1))
    choose = np.empty((len(thresholds), len(r)), dtype=bool)
    for i, t in enumerate(thresholds):
        choose[i] = r >= t if i != len(thresholds) - 1 else r > t
    return curve_from_choices(choose, strong_item, weak_item)


def random_curve(strong_item: np.ndarray, weak_item: np.ndarray, points: int = 11) -> Curve:
    """Expected curve of a router that sends each call to the strong model with probability p."""
    strong, weak = float(np.mean(strong_item)), float(np.mean(weak_item))
    p = np.linspace(0.0, 1.0, points)
    return Curve.of(p, weak + p * (strong - weak))


def oracle_curve(strong_item: np.ndarray, weak_item: np.ndarray, points: int = 11) -> Curve:
    """Best achievable curve: with a budget of k strong calls, spend them on the items with the largest positive gain.

    For 0/1 data this is RouteLLM's get_optimal_accuracy (weak correct + min(k, #weak-wrong-and-strong-right)); for
    MT-Bench it is the same idea on per-question mean scores.
    """
    strong_item = np.asarray(strong_item, dtype=float)
    weak_item = np.asarray(weak_item, dtype=float)
    n = len(strong_item)
    gains = np.sort(np.clip(strong_item - weak_item, 0.0, None))[::-1]
    cum = np.concatenate([[0.0], np.cumsum(gains)])
    p = np.linspace(0.0, 1.0, points)
    k = np.floor(p * n + 1e-9).astype(int)
    return Curve.of(p, (weak_item.sum() + cum[k]) / n)
