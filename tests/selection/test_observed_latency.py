"""The gateway's observed latency per model replaces the estimate for tradeoff="latency" once there is enough."""

from __future__ import annotations

from api.routing.router import Candidate
from api.selection.latency import ObservedLatency, estimated_latency_s, latency_s

MODEL = Candidate(provider="openai", model="gpt-4o", input_price=2.5, output_price=10.0)


def test_the_estimate_serves_until_enough_calls_were_seen() -> None:
    observed = ObservedLatency(min_calls=3)
    for seconds in (0.2, 0.4):
        observed.add("openai/gpt-4o", seconds)
    assert observed.seconds("openai/gpt-4o") is None
    assert latency_s(MODEL, 100, observed) == estimated_latency_s(MODEL, 100)
    observed.add("openai/gpt-4o", 9.0)
    assert observed.seconds("openai/gpt-4o") == 0.4  # the median: one slow call does not move it
    assert latency_s(MODEL, 100, observed) == 0.4


def test_the_figure_rolls_over_the_latest_calls() -> None:
    observed = ObservedLatency(min_calls=2, window=3)
    for seconds in (1.0, 1.0, 1.0, 3.0, 3.0):
        observed.add("m", seconds)
    assert observed.seconds("m") == 3.0  # the window holds the last three: 1, 3, 3


def test_memory_stays_bounded_whatever_names_arrive() -> None:
    observed = ObservedLatency(min_calls=1, max_models=10)
    for i in range(25):
        observed.add(f"provider/model-{i}", 1.0)
    assert len(observed._seen) <= 10
