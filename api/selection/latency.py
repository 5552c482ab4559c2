"""Latency estimates for `tradeoff="latency"`.

Custom models carry the caller's average latency. The catalogue carries no latency figures, so for catalogue
models we use a documented proxy: time to first token plus output time, with decoding speed falling as the
output price rises (price tracks model size across the catalogue). It only has to order candidates sensibly.
"""

from __future__ import annotations

from api.routing.policy import DEFAULT_OUTPUT_TOKENS
from api.routing.router import Candidate

FIRST_TOKEN_S = 0.4
FASTEST_TOKENS_PER_S = 200.0
SLOWEST_TOKENS_PER_S = 20.0


def estimated_latency_s(candidate: Candidate, prompt_tokens: int) -> float:
    if candidate.latency_s is not None:
        return float(candidate.latency_s)
    speed = FASTEST_TOKENS_PER_S / (1.0 + candidate.output_price / 4.0)
    speed = min(FASTEST_TOKENS_PER_S, max(SLOWEST_TOKENS_PER_S, speed))
    prefill = prompt_tokens / 5_000.0  # prompt processing is far faster than decoding
    return FIRST_TOKEN_S + prefill + DEFAULT_OUTPUT_TOKENS / speed
