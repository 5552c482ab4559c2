"""Latency estimates for `tradeoff="latency"`.

Custom models carry the caller's average latency. The catalogue carries no latency figures, so for catalogue
models we use a documented proxy: time to first token plus output time, with decoding speed falling as the
output price rises (price tracks model size across the catalogue). It only has to order candidates sensibly.
What the gateway observes replaces these estimates once it has enough calls of a model (ObservedLatency).
"""

from __future__ import annotations

import statistics
import threading
from collections import deque

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


class ObservedLatency:
    """A rolling figure per organization and provider/model from the calls the gateway made for that organization
    (api/gateway/service.py): the median of its latest `window` answered calls' total latency. Once an organization
    has `min_calls` of them for a model it replaces the estimate above (the catalogue proxy, or a custom model's
    declared figure) for that organization's `tradeoff="latency"` decisions. Per organization, because a figure
    shared by everyone is steerable by anyone: one caller's dozen slow calls of a model (a long prompt, a slow
    network, or on purpose) moved every other organization's latency choice (issue 31). Per API worker: each
    worker learns from the calls it made."""

    def __init__(self, min_calls: int = 10, window: int = 200, max_entries: int = 10_000) -> None:
        self.min_calls, self.window, self.max_entries = min_calls, window, max_entries
        self._seen: dict[tuple[str, str], deque[float]] = {}
        self._median: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def add(self, organization_id: str, model: str, seconds: float) -> None:
        key = (organization_id, model)
        with self._lock:
            calls = self._seen.get(key)
            if calls is None:
                if len(self._seen) >= self.max_entries:  # names and organizations vary: keep memory bounded
                    self._seen.clear()
                    self._median.clear()
                calls = self._seen[key] = deque(maxlen=self.window)
            calls.append(seconds)
            if len(calls) >= self.min_calls:
                self._median[key] = statistics.median(calls)

    def seconds(self, organization_id: str, model: str) -> float | None:
        return self._median.get((organization_id, model))


def latency_s(candidate: Candidate, prompt_tokens: int, observed: ObservedLatency | None,
              organization_id: str) -> float:
    """The organization's observed figure once there is enough of it, else the estimate."""
    seen = observed.seconds(organization_id, candidate.key) if observed is not None else None
    return seen if seen is not None else estimated_latency_s(candidate, prompt_tokens)
