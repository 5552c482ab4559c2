"""tradeoff="latency" uses the latency the gateway observed once a model has enough answered calls."""

from __future__ import annotations

import openai

from tests.support.fakes.openai_server import FakeOpenAI


def custom(model: str, latency: float, price: float) -> dict:
    return {"provider": "acme", "model": model, "is_custom": True, "context_length": 128000, "input_price": price,
            "output_price": price, "latency": latency}


def test_observed_latency_replaces_the_declared_figure(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    ask = [{"role": "user", "content": "Name a prime number."}]
    # Unequal prices: the named trade-offs take their weight from the dial's schedule (api/routing/dial.py), which
    # is calibrated on the candidates' costs; with equal prices it gave no weight here and latency moved nothing.
    slow_b = custom("lat-b", 5.0, 2.0)
    both = {"llm_providers": [custom("lat-a", 0.5, 1.0), slow_b], "tradeoff": "latency"}
    assert oai.chat.completions.create(model="switchboard", messages=ask, extra_body=both).model == "acme/lat-a"
    for _ in range(10):  # ObservedLatency's min_calls: lat-b answers the fake in milliseconds, not 5 s
        oai.chat.completions.create(model="switchboard", messages=ask,
                                    extra_body={"llm_providers": [slow_b]})
    assert oai.chat.completions.create(model="switchboard", messages=ask, extra_body=both).model == "acme/lat-b"
