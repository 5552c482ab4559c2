"""The familiarity threshold of a custom router: below it, a prompt goes to the upload's best single model.

A router is trained on the kinds of prompt its upload contains. A prompt of another kind gets the cluster (and
neighbours) it happens to be nearest to, and the model best there can be the worst choice for it (issue 33: a
router trained on RouterDC's files fell below the best single model on the out-of-distribution sets). Familiarity
(api/custom_router/neighbours.py) says how far the prompt is from the upload: the mean cosine similarity of its
nearest training prompts. Whether, and below what familiarity, to fall back is learned on the upload itself:

- kinds of the upload: an upload names no benchmarks, so its rows are split into GROUPS kinds by spherical k-means
  on the router's kNN features (the same features as the floor's clusters; on RouterDC's files these are close to
  its five benchmarks);
- leave one kind out: for each kind, the floor is refitted on the other kinds' rows with the choices of the served
  floor (its cluster count, shrinkage and neighbours' prior), the kind's rows are routed by it, and each row's
  familiarity is measured against the other kinds' rows: what a router meets on a kind its upload lacks;
- in distribution: the floor's nested cross-validated predictions, familiarity against the other folds;
- the threshold: from the quantiles THRESHOLD_QUANTILES of the in-distribution familiarity, or none, the one whose
  mean of the two accuracies at t = 0 (the kinds left out, averaged by kind; the rows in distribution) is highest;
  one must gain at least half a row's worth to leave "none", and its gain on the kinds left out must hold across
  kinds (flows/kinds_left_out.py, the rule the default router's floor learns by too).
The figure reported is nested: for each kind, the threshold is chosen without it and scored on it. A router that
routes as the best single model already, or an upload too small for two kinds, gets no threshold.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from api.custom_router.floor import OFF, Floor, assign, clip_quality
from api.custom_router.neighbours import Neighbourhood
from flows.custom_router import floor as floor_fit
from flows.custom_router.neighbours import NeighbourTable, outside
from flows.kinds_left_out import holds_across_kinds

GROUPS = 6
ROWS_PER_GROUP = 100
THRESHOLD_QUANTILES = (0.01, 0.02, 0.05, 0.1, 0.2)


def kinds(emb: np.ndarray, rows: int) -> np.ndarray | None:
    """The kind of each row (k-means), or None when the upload is too small for two kinds of ROWS_PER_GROUP."""
    k = min(GROUPS, rows // ROWS_PER_GROUP)
    if k < 2:
        return None
    return assign(emb, floor_fit.kmeans(emb, k, seed=1))


def refit(served: Floor, p: np.ndarray, y: np.ndarray, emb: np.ndarray) -> Floor:
    """The served floor's choices (cluster count, shrinkage, neighbours' prior, tie) refitted on these rows."""
    centroids = floor_fit.kmeans(emb, len(served.centroids))
    mu, pbar = floor_fit.cluster_stats(p, y, assign(emb, centroids), len(centroids))
    return replace(served, centroids=centroids, mu=mu, pbar=pbar, threshold=OFF, fallback=None)


def left_out(served: Floor, p: np.ndarray, y: np.ndarray, emb: np.ndarray, kind: np.ndarray) -> list[dict]:
    """Per kind left out: the refitted floor's t = 0 choices, the other kinds' best single model, familiarity."""
    out = []
    for g in np.unique(kind):
        here, rest = kind == g, kind != g
        near = outside(emb[here], emb[rest], y[rest])
        floor = refit(served, p[rest], y[rest], emb[rest])
        out.append({"rows": here, "pick": floor.predict(p[here], emb[here], near).argmax(axis=1),
                    "fallback": int(np.argmax(y[rest].mean(axis=0))), "familiarity": near.familiarity})
    return out


def accuracy(y: np.ndarray, pick: np.ndarray, fallback: int, familiarity: np.ndarray, threshold: float) -> float:
    chosen = np.where(familiarity < threshold, fallback, pick)
    return float(y[np.arange(len(y)), chosen].mean()) if len(y) else 0.0


def objective(threshold: float, kinds_out: list[dict], y: np.ndarray, nested_pick: np.ndarray, best: int,
              fam_in: np.ndarray, keep: np.ndarray) -> tuple[float, float, float]:
    """(the mean of the two, accuracy on the kinds left out by kind, accuracy in distribution) on the rows `keep`."""
    away = [accuracy(y[k["rows"]], k["pick"], k["fallback"], k["familiarity"], threshold) for k in kinds_out]
    inside = accuracy(y[keep], nested_pick[keep], best, fam_in[keep], threshold)
    out = float(np.mean(away)) if away else 0.0
    return (out + inside) / 2, out, inside


def gains_across_kinds(threshold: float, kinds_out: list[dict], y: np.ndarray) -> list[float]:
    """Per kind left out: accuracy falling back below `threshold` minus accuracy without a fallback."""
    return [accuracy(y[k["rows"]], k["pick"], k["fallback"], k["familiarity"], threshold)
            - accuracy(y[k["rows"]], k["pick"], k["fallback"], k["familiarity"], OFF) for k in kinds_out]


def choose(candidates: list[float], kinds_out: list[dict], y, nested_pick, best, fam_in, keep) -> float:
    scores = {t: objective(t, kinds_out, y, nested_pick, best, fam_in, keep)[0] for t in candidates}
    step = 0.5 / max(int(keep.sum()), 1)
    passing = [t for t in candidates if t == OFF or (scores[t] > scores[OFF] + step
                                                     and holds_across_kinds(gains_across_kinds(t, kinds_out, y)))]
    return max(passing, key=lambda t: (scores[t], -t))


def learn_threshold(served: Floor, report: dict, p: np.ndarray, y: np.ndarray, emb: np.ndarray,
                    nested: np.ndarray, table: NeighbourTable, log=print) -> tuple[Floor, dict, np.ndarray]:
    """(the served floor with its threshold and fallback, the familiarity report, the nested predictions with the
    fallback applied to the in-distribution rows it would catch)."""
    best = int(np.argmax(y.mean(axis=0)))
    fallback = y.mean(axis=0)
    kind = None if report["routes_as_best_single_model_at_t0"] else kinds(emb, len(y))
    if kind is None:
        why = ("the router routes as the best single model at t=0" if report["routes_as_best_single_model_at_t0"]
               else "too few rows for two kinds of prompt")
        log(f"familiarity: no threshold ({why})")
        return served, {"threshold": None, "why_none": why}, nested
    own: Neighbourhood = table.own_fold_out()
    kinds_out = left_out(served, p, y, emb, kind)
    nested_pick = nested.argmax(axis=1)
    candidates = [OFF] + [float(np.quantile(own.familiarity, q)) for q in THRESHOLD_QUANTILES]
    everyone = np.ones(len(y), dtype=bool)
    threshold = choose(candidates, kinds_out, y, nested_pick, best, own.familiarity, everyone)
    # nested over kinds: each kind's threshold chosen on the others alone, then scored on it
    nested_out, nested_in, none_out, none_in = [], [], [], []
    for i, k in enumerate(kinds_out):
        others = [o for j, o in enumerate(kinds_out) if j != i]
        t = choose(candidates, others, y, nested_pick, best, own.familiarity, ~k["rows"])
        nested_out.append(accuracy(y[k["rows"]], k["pick"], k["fallback"], k["familiarity"], t))
        nested_in.append(accuracy(y[k["rows"]], nested_pick[k["rows"]], best, own.familiarity[k["rows"]], t))
        none_out.append(accuracy(y[k["rows"]], k["pick"], k["fallback"], k["familiarity"], OFF))
        none_in.append(accuracy(y[k["rows"]], nested_pick[k["rows"]], best, own.familiarity[k["rows"]], OFF))
    sizes = np.array([k["rows"].sum() for k in kinds_out], dtype=float)
    single_out = float(np.mean([y[k["rows"]][:, k["fallback"]].mean() for k in kinds_out]))
    _, out_acc, in_acc = objective(threshold, kinds_out, y, nested_pick, best, own.familiarity, everyone)
    result = {"threshold": None if threshold == OFF else round(threshold, 6), "kinds": len(kinds_out),
              "threshold_quantile": (None if threshold == OFF else
                                     round(float((own.familiarity < threshold).mean()), 4)),
              "left_out_kinds_quality_t0": round(out_acc, 4), "in_distribution_quality_t0": round(in_acc, 4),
              "left_out_kinds_best_single_quality": round(single_out, 4),
              "nested_left_out_kinds_quality_t0": round(float(np.mean(nested_out)), 4),
              "nested_left_out_kinds_without_fallback": round(float(np.mean(none_out)), 4),
              "nested_in_distribution_quality_t0": round(float(np.average(nested_in, weights=sizes)), 4),
              "nested_in_distribution_without_fallback": round(float(np.average(none_in, weights=sizes)), 4)}
    if threshold == OFF:
        log(f"familiarity: no threshold pays on the upload's {len(kinds_out)} kinds left out in turn "
            f"(router {result['nested_left_out_kinds_without_fallback']:.4f} vs their best single model "
            f"{single_out:.4f})")
        return served, result, nested
    log(f"familiarity: threshold {threshold:.4f} (falls back on {result['threshold_quantile']:.1%} of the upload's "
        f"own rows); kinds left out: {result['nested_left_out_kinds_quality_t0']:.4f} nested vs "
        f"{result['nested_left_out_kinds_without_fallback']:.4f} without the fallback")
    chosen = replace(served, threshold=threshold, fallback=fallback)
    nested = nested.copy()
    nested[own.familiarity < threshold] = clip_quality(fallback)
    return chosen, result, nested
