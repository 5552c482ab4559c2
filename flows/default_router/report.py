"""How a trained default router is judged inside the training flow: the routing gain that picks the blend, and the
held-out report written into router.json and published as Prefect artifacts."""

from __future__ import annotations

import numpy as np

from api.routing.default_router import DefaultRouter
from api.routing.router import Candidate
from flows.default_router.data import BenchmarkItems
from flows.default_router.multi import Outcomes
from flows.default_router.pair_irt import PAIR
from flows.default_router.sweep import evaluate_pair
from flows.evaluation import oracle_curve, summarize, threshold_curve


def routing_gain(router: DefaultRouter, o: Outcomes, X: np.ndarray, fold: int | None = None,
                 rows: np.ndarray | None = None) -> float:
    """The share of the oracle's gain over random that the router recovers on one benchmark's fold (or the given
    rows), so pairs and many-model sets count alike: for a pair, (APGR - 0.5) / (oracle APGR - 0.5) over RouteLLM's
    threshold sweep; for many models, (accuracy of the predicted best - random choice) / (per-query best - random choice)."""
    rows = o.folds == fold if rows is None else rows  # rows: e.g. every row of a benchmark left out
    scores = np.nan_to_num(o.scores[rows])
    if o.source == "routellm":
        q = router.predict_quality_batch(X[rows], PAIR)
        strong, weak = scores[:, 0], scores[:, 1]
        apgr = summarize(threshold_curve(q[:, 0] - q[:, 1], strong, weak), float(weak.mean()), float(strong.mean()))
        oracle = summarize(oracle_curve(strong, weak), float(weak.mean()), float(strong.mean()))
        return (apgr.apgr - 0.5) / max(oracle.apgr - 0.5, 1e-9)
    picks = router.predict_quality_batch(X[rows], many_models(o)).argmax(axis=1)
    chosen = float(scores[np.arange(len(picks)), picks].mean())
    random, oracle = float(scores.mean()), float(scores.max(axis=1).mean())
    return (chosen - random) / max(oracle - random, 1e-9)


def many_models(o: Outcomes) -> list[Candidate]:
    """RouterDC's open models as candidates: all 7-8B, so equal prices (routing on quality alone)."""
    return [Candidate("huggingface", m, 1.0, 1.0) for m in o.models]


def heldout_report(router: DefaultRouter, pairs: dict[str, BenchmarkItems], sets: dict[str, Outcomes],
                   features: dict[str, np.ndarray], schedule: list[float], trained: tuple[str, ...]) -> dict:
    """Pairs (RouteLLM, on their own score scale): APGR and friends on the held-out fold through the real policy,
    MT-Bench whole (never trained on). Many models (RouterDC): accuracy of the predicted-best model against the
    best single model on the held-out fold, or every row of a set never trained on (CMMLU)."""
    out = {}
    for name, items in pairs.items():
        held = items.heldout
        q = router.predict_quality_batch(features[f"routellm/{name}"][held], PAIR)
        out[name] = evaluate_pair(name, q, items.strong[held], items.weak[held], schedule).as_dict()
    for key, o in sets.items():
        if o.source == "routellm":
            continue
        rows = o.heldout if key in trained else np.ones(len(o.prompts), dtype=bool)
        picks = router.predict_quality_batch(features[key][rows], many_models(o)).argmax(axis=1)
        scores = np.nan_to_num(o.scores[rows])
        singles = scores.mean(axis=0)
        out[key.replace("/", "_")] = {"items": int(rows.sum()),
                                      "router": round(float(scores[np.arange(len(picks)), picks].mean()), 4),
                                      "best_single": round(float(singles.max()), 4),
                                      "best_single_model": o.models[int(singles.argmax())]}
    return out
