"""The gateway against a hostile upstream (issue 31), through the real server: the probes that found each problem,
played by tests/support/fakes/hostile_upstream.py. A keyed provider `hostile` points at it; `openai/gpt-4o-mini`
(the ordinary fake) is the fallback that shows a candidate was given up before the first byte."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.gateway.conftest import rows
from tests.support.fakes.hostile_upstream import LEAKED_SHAPE, HostileUpstream
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import BIN, LocalApi, running_api

SERVER_KEY = "sk-hostile-server-key-0123456789abcdef"
ASK = [{"role": "user", "content": "What is the capital of Italy?"}]
FALLBACK = "openai/gpt-4o-mini"
LIMITS = {"SWITCHBOARD_GATEWAY_FIRST_BYTE_TIMEOUT_S": "3", "SWITCHBOARD_GATEWAY_ATTEMPT_TOTAL_TIMEOUT_S": "5",
          "SWITCHBOARD_GATEWAY_REQUEST_TOTAL_TIMEOUT_S": "20", "SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES": "1000000",
          "SWITCHBOARD_GATEWAY_MAX_PER_KEY": "2", "SWITCHBOARD_GATEWAY_MAX_PER_UPSTREAM": "3",
          "SWITCHBOARD_GATEWAY_POOL_WAIT_S": "0.3"}


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    fake = HostileUpstream().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def api(hostile: HostileUpstream) -> Iterator[LocalApi]:
    ordinary = FakeOpenAI().start()
    env = {"SWITCHBOARD_LLM_API_BASE": ordinary.base_url, "SWITCHBOARD_LLM_API_KEY": "sk-upstream-secret-0123456789",
           "SWITCHBOARD_HOSTILE_API_BASE": hostile.base_url, "SWITCHBOARD_HOSTILE_API_KEY": SERVER_KEY,
           "SWITCHBOARD_SESSION_FLUSH_SECONDS": "0.2", **LIMITS}
    try:
        with running_api(env) as served:
            yield served
    finally:
        ordinary.stop()


@pytest.fixture(scope="module")
def second_key(api: LocalApi) -> str:
    """Another user's key, issued through the running API's store."""
    out = subprocess.run([str(BIN / "switchboard"), "keys", "create", "--user", "another-user"], check=True,
                         capture_output=True, text=True, env={**os.environ, "SWITCHBOARD_DATA_DIR": str(api.data_dir)})
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture
def upstream(hostile: HostileUpstream) -> Iterator[HostileUpstream]:
    hostile.reset()
    yield hostile


def custom(behaviour: str) -> dict[str, Any]:
    """A candidate served by the hostile upstream, cheapest of all (so it is tried first at cost_quality 10)."""
    return {"provider": "hostile", "model": behaviour, "is_custom": True, "context_length": 128000,
            "input_price": 0.01, "output_price": 0.01, "latency": 1.0}


def ask(behaviour: str, fallback: bool = False, stream: bool = False) -> dict[str, Any]:
    return {"model": "switchboard", "messages": ASK, "stream": stream, "cost_quality_tradeoff": 10,
            "llm_providers": [custom(behaviour), *([FALLBACK] if fallback else [])]}


def post(api: LocalApi, body: dict[str, Any], key: str | None = None, timeout: float = 30) -> httpx.Response:
    headers = api.headers if key is None else {"Authorization": f"Bearer {key}"}
    return httpx.post(f"{api.base}/v1/chat/completions", json=body, headers=headers, timeout=timeout)


def call_row(api: LocalApi, session_id: str, columns: str) -> tuple:
    found = rows(api, f"SELECT {columns} FROM gateway_calls WHERE session_id = '{session_id}'", 1)
    assert len(found) == 1, found  # exactly one row per call
    return found[0]


def rows_of(api: LocalApi, behaviour: str, columns: str, expected: int = 1) -> list[tuple]:
    return rows(api, f"SELECT {columns} FROM gateway_calls WHERE list_contains(attempt_models, "
                     f"'hostile/{behaviour}') ORDER BY created_at", expected)


def assert_clean(text: str) -> None:
    assert SERVER_KEY not in text and LEAKED_SHAPE not in text and "Bearer sk-" not in text, text


# --- one redaction, every path ----------------------------------------------------------------------------------
def test_a_key_sent_in_a_running_stream_reaches_neither_the_caller_nor_the_log(api: LocalApi,
                                                                              upstream: HostileUpstream) -> None:
    with httpx.stream("POST", f"{api.base}/v1/chat/completions", json=ask("leak-mid-stream", stream=True),
                      headers=api.headers, timeout=30) as response:
        session_id = response.headers["x-switchboard-session-id"]
        text = response.read().decode()
    assert "upstream_stream_error" in text and "[redacted]" in text
    assert_clean(text)
    status, error = call_row(api, session_id, "status, error")
    assert status == "stream_error"
    assert_clean(error)


@pytest.mark.parametrize("behaviour", ["leak-first-event", "leak-500"])
def test_a_key_in_a_failed_first_answer_is_scrubbed_when_every_candidate_fails(api: LocalApi,
                                                                               upstream: HostileUpstream,
                                                                               behaviour: str) -> None:
    # The first event (stream) or a 5xx (not): fallback, and with no candidate left the 502 lists the last error.
    response = post(api, ask(behaviour, stream=behaviour == "leak-first-event"))
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_failed"
    assert_clean(response.text)
    assert "[redacted]" in response.json()["error"]["message"]
    assert_clean(rows_of(api, behaviour, "error")[-1][0])


def test_a_key_in_a_refusal_is_scrubbed_from_the_answer_and_the_log(api: LocalApi, upstream: HostileUpstream) -> None:
    response = post(api, ask("leak-400"))  # the provider refuses the request itself: the caller gets its 400
    assert response.status_code == 400 and response.json()["error"]["code"] == "upstream_rejected"
    assert_clean(response.text)
    assert_clean(rows_of(api, "leak-400", "error")[-1][0])


# --- redirects and statuses that are no answer ------------------------------------------------------------------
@pytest.mark.parametrize("behaviour", ["redirect-307", "redirect-302"])
def test_a_redirect_is_never_followed(api: LocalApi, upstream: HostileUpstream, behaviour: str) -> None:
    response = post(api, ask(behaviour))
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_redirect"
    assert upstream.redirected == 0  # the caller's body went nowhere else
    assert post(api, ask(behaviour, fallback=True)).json()["model"] == FALLBACK


@pytest.mark.parametrize("behaviour", ["status-201", "status-204", "status-304"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_success_status_that_is_no_completion_falls_back(api: LocalApi, upstream: HostileUpstream,
                                                           behaviour: str, stream: bool) -> None:
    alone = post(api, ask(behaviour, stream=stream))
    assert alone.status_code == 502 and alone.json()["error"]["code"] == "upstream_failed"
    answered = post(api, ask(behaviour, fallback=True, stream=stream))
    assert answered.status_code == 200 and answered.headers["x-switchboard-model"] == FALLBACK


# --- usage: validated, else estimated; one row per paid call ----------------------------------------------------
@pytest.mark.parametrize("behaviour", ["usage-abc", "usage-negative", "usage-huge", "usage-int64", "usage-missing",
                                       "usage-string"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_unusable_usage_is_replaced_by_an_estimate(api: LocalApi, upstream: HostileUpstream, behaviour: str,
                                                   stream: bool) -> None:
    response = post(api, ask(behaviour, stream=stream))
    assert response.status_code == 200
    if stream:
        assert "upstream_stream_error" not in response.text and response.text.endswith("data: [DONE]\n\n")
    status, tokens_in, tokens_out, estimated, cost = call_row(
        api, response.headers["x-switchboard-session-id"], "status, input_tokens, output_tokens, usage_estimated, "
        "cost_usd")
    assert status == "ok" and estimated is True
    assert 0 < tokens_in < 100 and 0 < tokens_out < 100  # the question and "Rome is the capital of Italy."
    assert cost > 0


def test_sane_usage_is_kept_and_not_marked_estimated(api: LocalApi, upstream: HostileUpstream) -> None:
    response = post(api, ask("ok"))
    assert call_row(api, response.headers["x-switchboard-session-id"],
                    "input_tokens, output_tokens, usage_estimated") == (12, 8, False)


def test_a_chunk_whose_choices_are_an_object_ends_the_stream_with_an_error_event(api: LocalApi,
                                                                               upstream: HostileUpstream) -> None:
    response = post(api, ask("choices-object", stream=True))
    assert response.status_code == 200 and "upstream_stream_error" in response.text
    assert call_row(api, response.headers["x-switchboard-session-id"], "status, usage_estimated") == (
        "stream_error", True)


# --- deadlines --------------------------------------------------------------------------------------------------
def test_keep_alive_comments_count_as_silence_before_the_first_event(api: LocalApi,
                                                                     upstream: HostileUpstream) -> None:
    response = post(api, ask("keepalive", fallback=True, stream=True))
    assert response.status_code == 200 and response.headers["x-switchboard-model"] == FALLBACK
    outcomes = call_row(api, response.headers["x-switchboard-session-id"], "attempt_outcomes")[0]
    assert outcomes == ["timeout", "ok"]  # not "empty_stream" after the provider's 20 s of comments


def test_a_trickled_answer_ends_at_the_attempt_deadline(api: LocalApi, upstream: HostileUpstream) -> None:
    response = post(api, ask("trickle", fallback=True))
    assert response.status_code == 200 and response.json()["model"] == FALLBACK
    assert call_row(api, response.headers["x-switchboard-session-id"], "attempt_outcomes")[0] == ["timeout", "ok"]


# --- size caps --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("behaviour", ["huge", "gzip-bomb"])
def test_an_answer_over_the_size_bound_is_a_502_and_recorded(api: LocalApi, upstream: HostileUpstream,
                                                             behaviour: str) -> None:
    response = post(api, ask(behaviour))
    assert response.status_code == 502 and response.json()["error"]["code"] == "upstream_too_large"
    assert "SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES" in response.json()["error"]["message"]
    assert rows_of(api, behaviour, "attempt_outcomes")[-1][0] == ["too_large"]
    assert post(api, ask(behaviour, fallback=True)).json()["model"] == FALLBACK


def test_a_stream_line_over_the_size_bound_ends_with_an_error_event(api: LocalApi, upstream: HostileUpstream) -> None:
    response = post(api, ask("huge-line", stream=True))
    assert response.status_code == 200 and "SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES" in response.text
    assert call_row(api, response.headers["x-switchboard-session-id"], "status, error") == (
        "stream_error", "too_large")


# --- the pool: bounded waits and limits, and calls cancelled when their caller leaves ----------------------------
def many(api: LocalApi, body: dict[str, Any], n: int, key: str | None = None) -> list[httpx.Response]:
    async def send() -> list[httpx.Response]:
        headers = api.headers if key is None else {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(timeout=30) as client:
            return list(await asyncio.gather(*(client.post(f"{api.base}/v1/chat/completions", json=body,
                                                           headers=headers) for _ in range(n))))
    return asyncio.run(send())


def test_one_key_cannot_hold_more_than_its_share_of_the_pool(api: LocalApi, upstream: HostileUpstream) -> None:
    upstream.slow_s = 2.0
    answers = many(api, ask("slow"), 3)
    assert sorted(r.status_code for r in answers) == [200, 200, 429]  # SWITCHBOARD_GATEWAY_MAX_PER_KEY = 2
    refused = [r for r in answers if r.status_code == 429][0]
    assert refused.json()["error"]["code"] == "concurrency_limited" and int(refused.headers["Retry-After"]) >= 1


def test_a_full_upstream_sends_the_call_to_the_next_candidate_or_answers_503(api: LocalApi, second_key: str,
                                                                            upstream: HostileUpstream) -> None:
    upstream.slow_s = 2.0

    others = {"Authorization": f"Bearer {second_key}"}

    async def crowd_then_ask() -> tuple[list[httpx.Response], httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            url, headers = f"{api.base}/v1/chat/completions", api.headers
            crowd = [asyncio.ensure_future(client.post(url, json=ask("slow"), headers=h))
                     for h in (headers, headers, others)]  # two keys, each within its own bound
            while upstream.in_flight < 3:  # the endpoint's three slots are taken
                await asyncio.sleep(0.05)
            other = await client.post(url, json=ask("ok", fallback=True), headers=others)
            alone = await client.post(url, json=ask("ok"), headers=others)
            return list(await asyncio.gather(*crowd)), other, alone

    crowd, other, alone = asyncio.run(crowd_then_ask())
    assert [r.status_code for r in crowd] == [200, 200, 200]
    assert other.status_code == 200 and other.json()["model"] == FALLBACK
    assert alone.status_code == 503 and alone.json()["error"]["code"] == "upstream_busy"
    assert int(alone.headers["Retry-After"]) >= 1


def test_a_caller_that_leaves_cancels_its_non_streamed_upstream_call(api: LocalApi,
                                                                     upstream: HostileUpstream) -> None:
    upstream.slow_s = 20.0
    with pytest.raises(httpx.ReadTimeout):
        post(api, ask("slow"), timeout=1.0)
    deadline = time.monotonic() + 10
    while upstream.abandoned < 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert upstream.abandoned == 1 and upstream.in_flight == 0  # the gateway hung up on the provider at once
    assert rows_of(api, "slow", "status, http_status, attempt_outcomes")[-1] == ("client_closed", 499,
                                                                                 ["client_closed"])


def test_the_official_client_sees_a_clean_error(api: LocalApi, upstream: HostileUpstream) -> None:
    with openai.OpenAI(base_url=f"{api.base}/v1", api_key=api.key, max_retries=0, timeout=30) as client:
        with pytest.raises(openai.APIError) as failed:
            for _ in client.chat.completions.create(model="switchboard", messages=ASK, stream=True,
                                                    extra_body={k: v for k, v in ask("leak-mid-stream").items()
                                                                if k in ("llm_providers", "cost_quality_tradeoff")}):
                pass
    assert_clean(str(failed.value))
