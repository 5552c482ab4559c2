"""POST /v1/chat/completions and GET /v1/models with the official `openai` client, through the real server."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi

CHEAP_FIRST = {"llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4o"],
               "cost_quality_tradeoff": 10}  # pure cost: the router ranks them by price, cheapest first
ROUTED = {"llm_providers": ["openai/gpt-4o", "openai/gpt-4o-mini"]}
WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
                                                 "parameters": {"type": "object",
                                                                "properties": {"location": {"type": "string"}},
                                                                "required": ["location"]}}}


def ask(text: str = "What is the capital of France?") -> list[dict]:
    return [{"role": "user", "content": text}]


def test_create_routes_calls_and_names_the_model_that_answered(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    raw = oai.chat.completions.with_raw_response.create(model="switchboard", messages=ask(), extra_body=ROUTED,
                                                        temperature=0.2, max_tokens=50)
    completion = raw.parse()
    chosen = raw.headers["x-switchboard-model"]
    assert chosen in ROUTED["llm_providers"]
    assert completion.model == chosen  # the model that answered, in provider/model form
    assert completion.choices[0].message.content
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert raw.headers["x-switchboard-session-id"] and raw.headers["x-switchboard-attempts"] == "1"
    sent = upstream.bodies[-1]
    assert sent["model"] == chosen.split("/", 1)[1]  # the provider's own model id
    assert sent["temperature"] == 0.2 and sent["max_tokens"] == 50  # passed through as sent
    assert "llm_providers" not in sent  # routing fields are switchboard's, never forwarded


def test_the_session_id_takes_feedback_like_model_select(oai: openai.OpenAI, upstream: FakeOpenAI,
                                                          gateway_api: LocalApi) -> None:
    raw = oai.chat.completions.with_raw_response.create(model="switchboard", messages=ask(), extra_body=ROUTED)
    provider, model = raw.headers["x-switchboard-model"].split("/", 1)
    report = httpx.post(f"{gateway_api.base}/v2/report/metrics/feedback", headers=gateway_api.headers, timeout=10,
                        json={"session_id": raw.headers["x-switchboard-session-id"],
                              "provider": {"provider": provider, "model": model}, "feedback": {"accuracy": 1}})
    assert report.status_code == 200, report.text
    assert report.json()["accepted"] is True


def test_stream_with_usage(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    chunks = list(oai.chat.completions.create(model="switchboard", messages=ask(), extra_body=ROUTED, stream=True,
                                              stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "I do not know."  # the fake's whole reply, in order, from its three content chunks
    assert {c.model for c in chunks} <= set(ROUTED["llm_providers"]) and len({c.model for c in chunks}) == 1
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_stream_without_usage_asked_gets_no_usage_chunk(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    chunks = list(oai.chat.completions.create(model="switchboard", messages=ask(), extra_body=ROUTED, stream=True))
    assert all(c.usage is None for c in chunks) and all(c.choices for c in chunks)
    assert upstream.bodies[-1]["stream_options"] == {"include_usage": True}  # asked upstream for the accounting


def test_tools_and_tool_choice_pass_through(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    completion = oai.chat.completions.create(model="switchboard", messages=ask("Weather in Paris?"),
                                             extra_body=ROUTED, tools=[WEATHER_TOOL], tool_choice="auto",
                                             response_format={"type": "text"})
    call = completion.choices[0].message.tool_calls[0]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"location": "Paris"}
    sent = upstream.bodies[-1]
    assert sent["tools"] == [WEATHER_TOOL] and sent["tool_choice"] == "auto"
    assert sent["response_format"] == {"type": "text"}


def test_streamed_tool_call(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    chunks = list(oai.chat.completions.create(model="switchboard", messages=ask("Weather in Paris?"),
                                              extra_body=ROUTED, tools=[WEATHER_TOOL], stream=True))
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or ())]
    assert calls[0].function.name == "get_weather"
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_preference_routes_by_name(oai: openai.OpenAI, upstream: FakeOpenAI, gateway_api: LocalApi) -> None:
    created = httpx.post(f"{gateway_api.base}/v2/preferences/userPreferenceCreate", headers=gateway_api.headers,
                         json={"name": "gateway"}, timeout=10)
    assert created.status_code == 200, created.text
    preference_id = created.json()["preference_id"]
    names = {m.id for m in oai.models.list()}
    assert {"switchboard", f"switchboard/{preference_id}"} <= names
    completion = oai.chat.completions.create(model=f"switchboard/{preference_id}", messages=ask(), extra_body=ROUTED)
    assert completion.model in ROUTED["llm_providers"]
    with pytest.raises(openai.NotFoundError) as missing:
        oai.chat.completions.create(model="switchboard/no-such-preference", messages=ask(), extra_body=ROUTED)
    assert missing.value.body["code"] == "preference_not_found"  # OpenAI's error shape: {"error": {...}}


def test_a_concrete_model_is_proxied_without_routing(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    raw = oai.chat.completions.with_raw_response.create(model="openai/gpt-4.1-mini", messages=ask())
    assert raw.parse().model == "openai/gpt-4.1-mini" and upstream.bodies[-1]["model"] == "gpt-4.1-mini"


def test_errors_on_v1_take_openai_shape(oai: openai.OpenAI, gateway_api: LocalApi, upstream: FakeOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as no_candidates:
        oai.chat.completions.create(model="switchboard", messages=ask())
    assert no_candidates.value.body["code"] == "no_candidates" and "llm_providers" in no_candidates.value.message
    with pytest.raises(openai.BadRequestError) as bad_model:
        oai.chat.completions.create(model="gpt-4o", messages=ask())
    assert bad_model.value.body["code"] == "invalid_model"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=f"{gateway_api.base}/v1", api_key="sb-wrong", max_retries=0).models.list()
    not_json = httpx.post(f"{gateway_api.base}/v1/chat/completions", headers=gateway_api.headers, content=b"{",
                          timeout=10)
    assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "invalid_request_error"
    assert upstream.bodies == []  # none of these reached a provider



def test_a_preference_stores_its_candidates_so_the_client_sends_only_the_name(oai: openai.OpenAI,
                                                                            upstream: FakeOpenAI,
                                                                            gateway_api: LocalApi) -> None:
    preference_id = httpx.post(f"{gateway_api.base}/v2/preferences/userPreferenceCreate",
                               headers=gateway_api.headers, json={"name": "stored"}, timeout=10).json()["preference_id"]
    update = httpx.put(f"{gateway_api.base}/v2/preferences/userPreferenceUpdate", headers=gateway_api.headers,
                       json={"preference_id": preference_id, "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"],
                             "cost_quality_tradeoff": 10}, timeout=10)
    assert update.status_code == 200, update.text
    assert update.json()["llm_providers"] == ["openai/gpt-4o-mini", "openai/gpt-4o"]
    completion = oai.chat.completions.create(model=f"switchboard/{preference_id}", messages=ask())
    assert completion.model == "openai/gpt-4o-mini"  # the stored candidates, at the stored trade-off (cheapest)
    bad = httpx.put(f"{gateway_api.base}/v2/preferences/userPreferenceUpdate", headers=gateway_api.headers,
                    json={"preference_id": preference_id, "llm_providers": ["gpt-4o"]}, timeout=10)
    assert bad.status_code == 422  # not provider/model
