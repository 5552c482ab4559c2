"""What "a retrained default router reproduces the committed one" means, so that it holds on any CPU.

Training is deterministic on one machine (single-threaded BLAS, fixed L-BFGS budgets from fixed starts, no
randomness), but another CPU or BLAS kernel computes the same sums in another order: the last bits differ, and
L-BFGS amplifies them into parameter differences of about 1e-3 relative along the flat directions of the loss.
Those are not differences in the router. The retrained router reproduces the committed one when

1. its settings are the same: every key, name, count and vector length of router.json, and the chosen blend;
2. it routes the probe set the same: the 448 prompts of the artefact's calibration pool, each decided between
   GPT-4-1106 and Mixtral at every cost_quality_tradeoff 0..10 through the real policy with each router's own
   schedule, and among RouterDC's 7 open models on quality (5,376 decisions). At most DECISION_SHARE of them may
   differ, and only near-ties: decisions where the committed router's two utilities are within NEAR_TIE;
3. its held-out report agrees: every figure (APGR, AUC, CPT, strong-call shares, accuracies) within
   METRIC_TOLERANCE, absolute.

tests/flows/test_train_default_router.py checks this under two BLAS and SIMD configurations (docs/routing.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from api.routing.default_router import load_default_router
from api.routing.router import Candidate
from flows.default_router.multi import ROUTERDC_MODELS
from flows.default_router.pair_irt import PAIR
from flows.default_router.sweep import tradeoff_choices

DECISION_SHARE = 0.01  # at most 1 % of the probe decisions may differ ...
NEAR_TIE = 0.01  # ... each where the committed router's utilities differ by at most this (quality is 0..1)
METRIC_TOLERANCE = 0.01  # held-out figures within this, absolute (one GSM8K item of 256 moves a share by 0.004)
MANY = [Candidate("huggingface", m, 1.0, 1.0) for m in ROUTERDC_MODELS]


@dataclass(frozen=True)
class Reproduction:
    decisions: int
    differing: int
    widest_differing_margin: float  # the committed router's margin on the least tied decision that differs
    metric_gap: float  # the largest absolute difference between the two held-out reports
    settings_differ: list[str] = field(default_factory=list)  # paths in router.json whose settings differ

    @property
    def reproduces(self) -> bool:
        return (not self.settings_differ and self.differing <= DECISION_SHARE * self.decisions
                and self.widest_differing_margin <= NEAR_TIE and self.metric_gap <= METRIC_TOLERANCE)

    def as_dict(self) -> dict:
        return {**asdict(self), "reproduces": self.reproduces}


def probe_prompts(artefact_dir: Path) -> list[str]:
    lines = (Path(artefact_dir) / "calibration_pool.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["prompt"] for line in lines if line.strip()]


def decisions(artefact_dir: Path, prompts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(choices, margins), one entry per probe decision: the pair at t = 0..10 (1 = GPT-4), then the argmax
    among RouterDC's models; margin = how far the decision is from flipping, in utility."""
    router = load_default_router(artefact_dir)
    vectors = router.featurizer.featurize_batch(prompts)
    pair = router.predict_quality_batch(vectors, PAIR)
    chosen = tradeoff_choices(pair, router.schedule)  # (11, n), the real policy
    gap = pair[:, 0] - pair[:, 1]
    # Two candidates: normalised log costs are 1 (GPT-4) and 0, so utility(GPT-4) - utility(Mixtral) = gap - lambda.
    lam = np.asarray(router.schedule)[:, None]
    with np.errstate(invalid="ignore"):
        pair_margin = np.where(np.isinf(lam), np.inf, np.abs(gap[None, :] - lam))
    many = router.predict_quality_batch(vectors, MANY)
    top2 = np.sort(many, axis=1)[:, -2:]
    choices = np.concatenate([chosen.astype(np.int64).ravel(), many.argmax(axis=1)])
    margins = np.concatenate([pair_margin.ravel(), top2[:, 1] - top2[:, 0]])
    return choices, margins


def _settings(value: Any) -> Any:
    """router.json without its fitted numbers: structure, names, counts, vector lengths."""
    if isinstance(value, float):
        return "<number>"
    if isinstance(value, dict):
        return {k: _settings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_settings(v) for v in value]
    return value


def _differing_paths(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(a.keys() | b.keys())
        return [p for k in keys for p in _differing_paths(a.get(k), b.get(k), f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [p for i, (x, y) in enumerate(zip(a, b)) for p in _differing_paths(x, y, f"{path}[{i}]")]
    return [] if a == b else [path or "/"]


def _numbers(value: Any, path: str = "") -> dict[str, float]:
    if isinstance(value, dict):
        return {p: x for k, v in value.items() for p, x in _numbers(v, f"{path}/{k}").items()}
    if isinstance(value, list):
        return {p: x for i, v in enumerate(value) for p, x in _numbers(v, f"{path}[{i}]").items()}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return {path: float(value)}
    return {}


def metric_gap(committed: dict, retrained: dict) -> float:
    a, b = _numbers(committed), _numbers(retrained)
    gaps = [0.0 if (math.isnan(a[k]) and math.isnan(b[k])) else abs(a[k] - b[k]) for k in a.keys() & b.keys()]
    return max(gaps, default=0.0) if a.keys() == b.keys() else math.inf


def compare(committed_dir: Path, retrained_dir: Path) -> Reproduction:
    committed = json.loads((Path(committed_dir) / "router.json").read_text(encoding="utf-8"))
    retrained = json.loads((Path(retrained_dir) / "router.json").read_text(encoding="utf-8"))
    settings_differ = _differing_paths(_settings(committed), _settings(retrained))
    if committed.get("blend") != retrained.get("blend"):
        settings_differ.append("/blend")
    prompts = probe_prompts(committed_dir)
    before, margins = decisions(committed_dir, prompts)
    after, _ = decisions(retrained_dir, prompts)
    differ = before != after
    return Reproduction(
        decisions=len(before), differing=int(differ.sum()),
        widest_differing_margin=round(float(margins[differ].max(initial=0.0)), 6),
        metric_gap=round(metric_gap(committed.get("heldout_report", {}), retrained.get("heldout_report", {})), 6),
        settings_differ=settings_differ[:20])
