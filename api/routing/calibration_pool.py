"""The broad prompt pool that calibrates the trade-off dial for a caller without history (api/routing/dial.py).

datasets/default_router/calibration_pool.jsonl holds a few hundred prompts of many kinds: questions from the
training splits of public benchmarks (MMLU, GSM8K, HumanEval; MIT) and everyday requests written for switchboard
(writing, code, translation in several languages, advice, extraction). They are featurised once at start-up
with the serving featurizer and scored by the default router for a candidate set when the dial first meets it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np

from api.routing.features import Featurizer
from api.routing.policy import normalised_log, request_cost_usd
from api.routing.router import Candidate
from api.shipped import shipped

POOL_FILE = "default_router/calibration_pool.jsonl"
TYPICAL_PROMPT_TOKENS = 400  # the pool's cost positions use one typical request size


def pool_prompts() -> list[str]:
    lines = shipped(POOL_FILE).read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["prompt"] for line in lines if line.strip()]


def pool_scorer(router, featurizer: Featurizer):
    """candidates -> (quality (n, m), cost position (n, m)) of the pool, for TrafficDial."""
    vectors = featurizer.featurize_batch(pool_prompts())

    def score(candidates: Sequence[Candidate]) -> tuple[np.ndarray, np.ndarray]:
        quality = router.predict_quality_batch(vectors, candidates)
        cost = request_cost_usd(np.array([c.input_price for c in candidates]),
                                np.array([c.output_price for c in candidates]), TYPICAL_PROMPT_TOKENS)
        return quality, np.broadcast_to(normalised_log(cost), quality.shape).copy()

    return score
