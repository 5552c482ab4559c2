"""Bounded fallbacks before the first byte, one test per cause, never a retry once a stream began, and every
attempt recorded beside the decision (the gateway_calls event log and its analyst views)."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import openai
import pytest

from tests.gateway.conftest import MAX_ATTEMPTS, rows
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi

CHEAP_FIRST = {"llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4o"],
               "cost_quality_tradeoff": 10}  # pure cost: ranked by price, so gpt-4o-mini is the first choice
FIRST, SECOND, THIRD = "gpt-4o-mini", "gpt-4.1-mini", "gpt-4o"
ASK = [{"role": "user", "content": "What is the capital of Italy?"}]


def upstream_models(fake: FakeOpenAI) -> list[str]:
    return [body["model"] for body in fake.bodies]


def answered_by_second(oai: openai.OpenAI, stream: bool = False) -> tuple[str, str]:
    """(the answering model, the session id) of a request whose first choice fails."""
    if stream:
        with oai.chat.completions.with_streaming_response.create(model="switchboard", messages=ASK, stream=True,
                                                                  extra_body=CHEAP_FIRST) as raw:
            chunks = list(raw.parse())
            assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "I do not know."
            return chunks[0].model, raw.headers["x-switchboard-session-id"]
    raw = oai.chat.completions.with_raw_response.create(model="switchboard", messages=ASK, extra_body=CHEAP_FIRST)
    assert raw.headers["x-switchboard-attempts"] == "2"
    return raw.parse().model, raw.headers["x-switchboard-session-id"]


CAUSES: dict[str, Callable[[FakeOpenAI], None]] = {
    "http_500": lambda fake: fake.failing.add(FIRST),
    "http_503": lambda fake: fake.flaky.__setitem__(FIRST, 1),
    "http_429": lambda fake: fake.rate_limited.__setitem__(FIRST, 1),
    "timeout": lambda fake: fake.stalled.__setitem__(FIRST, 3.0),  # the server waits 1 s for a first byte
    "context_length": lambda fake: fake.too_long.add(FIRST),
}


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
@pytest.mark.parametrize("cause", list(CAUSES))
def test_the_next_candidate_answers(cause: str, stream: bool, oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    CAUSES[cause](upstream)
    model, _ = answered_by_second(oai, stream)
    assert model == f"openai/{SECOND}"
    assert upstream_models(upstream) == [FIRST, SECOND]


def test_a_connection_refused_falls_back(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    # A custom model of a provider whose base URL has no server behind it (tests/gateway/conftest.py), cheapest.
    dead = {"provider": "deadhost", "model": "m1", "is_custom": True, "context_length": 128000,
            "input_price": 0.01, "output_price": 0.01, "latency": 1.0}
    raw = oai.chat.completions.with_raw_response.create(
        model="switchboard", messages=ASK, extra_body={"llm_providers": [dead, "openai/gpt-4o-mini"],
                                                       "cost_quality_tradeoff": 10})
    assert raw.parse().model == "openai/gpt-4o-mini" and raw.headers["x-switchboard-attempts"] == "2"


def test_attempts_are_bounded(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    four = {**CHEAP_FIRST, "llm_providers": [*CHEAP_FIRST["llm_providers"], "openai/gpt-4.1"]}
    upstream.failing.update({FIRST, SECOND, THIRD, "gpt-4.1"})
    with pytest.raises(openai.APIStatusError) as failed:
        oai.chat.completions.create(model="switchboard", messages=ASK, extra_body=four)
    assert failed.value.status_code == 502 and failed.value.body["code"] == "upstream_failed"
    assert MAX_ATTEMPTS == 3 and upstream_models(upstream) == [FIRST, SECOND, "gpt-4.1"]  # never the fourth


def test_a_refused_request_is_not_retried(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    # The provider refuses its own server key (401, echoing it as some do): the caller's request would fail on
    # every candidate alike, so it is not retried, and the key never reaches the caller.
    upstream.echo_key.add(FIRST)
    try:
        with pytest.raises(openai.APIStatusError) as refused:
            oai.chat.completions.create(model="switchboard", messages=ASK, extra_body=CHEAP_FIRST)
    finally:
        upstream.echo_key.clear()
    assert refused.value.status_code == 502 and "sk-upstream-secret" not in refused.value.response.text
    assert upstream_models(upstream) == [FIRST]


def test_a_stream_that_breaks_is_ended_with_an_error_and_never_retried(oai: openai.OpenAI,
                                                                      upstream: FakeOpenAI) -> None:
    upstream.broken_stream.add(FIRST)
    received = []
    with pytest.raises(openai.APIError, match="not retried"):
        for chunk in oai.chat.completions.create(model="switchboard", messages=ASK, extra_body=CHEAP_FIRST,
                                                 stream=True):
            received.append(chunk)
    assert len(received) == 1 and received[0].model == f"openai/{FIRST}"  # the one chunk sent before the break
    assert upstream_models(upstream) == [FIRST]


def test_a_first_choice_failing_30_percent_of_calls_costs_the_caller_no_error(oai: openai.OpenAI,
                                                                             upstream: FakeOpenAI) -> None:
    models = []
    for i in range(10):
        if i % 10 in (2, 5, 8):  # three calls in ten: 500, 429, 503 in turn
            (upstream.failing.add, lambda m: upstream.rate_limited.__setitem__(m, 1),
             lambda m: upstream.flaky.__setitem__(m, 1))[(i - 2) // 3](FIRST)
        models.append(oai.chat.completions.create(model="switchboard", messages=ASK, extra_body=CHEAP_FIRST).model)
        upstream.failing.discard(FIRST)
    assert models.count(f"openai/{SECOND}") == 3 and models.count(f"openai/{FIRST}") == 7


def test_every_attempt_and_the_outcome_are_recorded_beside_the_decision(oai: openai.OpenAI, upstream: FakeOpenAI,
                                                                        gateway_api: LocalApi) -> None:
    upstream.rate_limited[FIRST] = 1
    _, session_id = answered_by_second(oai)
    found = rows(gateway_api, "SELECT chosen, answered, fell_back, status, http_status, attempts, attempt_models, "
                 "attempt_outcomes, input_tokens, output_tokens, cost_usd, strongest, savings_usd, ttft_ms, latency_ms,"
                 f" router_kind FROM gateway_calls WHERE session_id = '{session_id}'"
                 " AND router_kind IS NOT NULL", 1)  # the two logs flush on their own timers: wait for both
    (chosen, answered, fell_back, status, http_status, attempts, models, outcomes, tokens_in, tokens_out, cost,
     strongest, savings, ttft, latency, router_kind) = found[0]
    assert (chosen, answered, fell_back) == (f"openai/{FIRST}", f"openai/{SECOND}", True)
    assert (status, http_status, attempts) == ("ok", 200, 2)
    assert models == [f"openai/{FIRST}", f"openai/{SECOND}"] and outcomes == ["http_429", "ok"]
    assert tokens_in > 0 and tokens_out > 0
    assert cost == pytest.approx((tokens_in * 0.4 + tokens_out * 1.6) / 1e6)  # gpt-4.1-mini's catalogue prices
    assert strongest in CHEAP_FIRST["llm_providers"] and savings is not None
    assert 0 < ttft <= latency and router_kind == "default"  # joined to its routing decision
    health = dict(rows(gateway_api, "SELECT model, failed FROM gateway_model_health", 2))
    assert health[f"openai/{FIRST}"] >= 1


def test_hash_content_keeps_plaintext_out_of_the_logs(oai: openai.OpenAI, upstream: FakeOpenAI,
                                                      gateway_api: LocalApi) -> None:
    secret = "the launch code is 7431-plaintext"
    raw = oai.chat.completions.with_raw_response.create(
        model="switchboard", messages=[{"role": "user", "content": secret}],
        extra_body={**CHEAP_FIRST, "hash_content": True})
    session_id = raw.headers["x-switchboard-session-id"]
    assert rows(gateway_api, f"SELECT 1 FROM gateway_calls WHERE session_id = '{session_id}'", 1)
    assert rows(gateway_api, f"SELECT 1 FROM routing_decisions WHERE session_id = '{session_id}'", 1)
    events = gateway_api.data_dir / "events"
    assert list(events.rglob("*.parquet"))  # the logs are there, and hold no plaintext
    assert not [p for p in events.rglob("*") if p.is_file() and b"7431-plaintext" in p.read_bytes()]


def test_a_caller_that_leaves_mid_stream_closes_the_providers_stream(upstream: FakeOpenAI,
                                                                     gateway_api: LocalApi) -> None:
    upstream.slow_stream[FIRST] = 0.5  # the provider's events come half a second apart
    body = {"model": f"openai/{FIRST}", "stream": True, "messages": [{"role": "user", "content": "Count to ten."}]}
    with httpx.stream("POST", f"{gateway_api.base}/v1/chat/completions", json=body, headers=gateway_api.headers,
                      timeout=30) as response:
        assert response.status_code == 200
        session_id = response.headers["x-switchboard-session-id"]
        next(response.iter_lines())  # the first event, then the caller goes away
    found = rows(gateway_api, f"SELECT status FROM gateway_calls WHERE session_id = '{session_id}'", 1)
    assert found == [("client_closed",)]
    deadline = time.monotonic() + 10
    while upstream.cut_streams < 1 and time.monotonic() < deadline:  # the provider's next write finds it closed
        time.sleep(0.1)
    assert upstream.cut_streams >= 1
