"""POST /v1/messages with the official `anthropic` client, through the real server: Anthropic's Messages format on
the gateway's one path (decision, fallbacks, records, limits), translated to the OpenAI wire format the fake
upstream speaks and back."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import httpx
import pytest

from tests.gateway.conftest import rows
from tests.gateway.test_stickiness import ROUTING as STICKY_ROUTING
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi

CHEAP_FIRST = {"llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4o"],
               "cost_quality_tradeoff": 10}  # pure cost: ranked by price, so gpt-4o-mini is the first choice
FIRST, SECOND = "gpt-4o-mini", "gpt-4.1-mini"
ASK = [{"role": "user", "content": "What is the capital of Italy?"}]
WEATHER = {"name": "get_weather", "description": "Current weather in a city",
           "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                            "required": ["location"]}}


@pytest.fixture
def claude(gateway_api: LocalApi) -> Iterator[anthropic.Anthropic]:
    # api_key: sent as `x-api-key`, as Anthropic's clients do by default
    with anthropic.Anthropic(base_url=gateway_api.base, api_key=gateway_api.key, max_retries=0, timeout=30) as c:
        yield c


def test_create_routes_and_answers_in_anthropics_format(claude: anthropic.Anthropic, upstream: FakeOpenAI) -> None:
    raw = claude.messages.with_raw_response.create(
        model="switchboard", max_tokens=64, system="Answer briefly.", messages=ASK, stop_sequences=["\n\n"],
        extra_body={**CHEAP_FIRST, "temperature": 0.1})  # this client version sends temperature only this way
    message = raw.parse()
    assert message.type == "message" and message.role == "assistant"
    assert message.model == raw.headers["x-switchboard-model"] == f"openai/{FIRST}"
    assert [b.type for b in message.content] == ["text"] and message.content[0].text
    assert message.stop_reason == "end_turn"
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0
    assert raw.headers["x-switchboard-session-id"]
    sent = upstream.bodies[-1]  # what the provider got: the chat-completions form
    assert sent["model"] == FIRST and sent["max_tokens"] == 64 and sent["stop"] == ["\n\n"]
    assert sent["messages"] == [{"role": "system", "content": "Answer briefly."}, *ASK]
    assert sent["temperature"] == 0.1 and "llm_providers" not in sent


def test_stream_follows_anthropics_event_sequence(claude: anthropic.Anthropic, upstream: FakeOpenAI) -> None:
    with claude.messages.stream(model="switchboard", max_tokens=64, messages=ASK, extra_body=CHEAP_FIRST) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert kinds[1] == "content_block_start" and "content_block_delta" in kinds
    assert kinds.index("content_block_stop") < kinds.index("message_delta") < kinds.index("message_stop")
    assert final.content[0].text == "I do not know."  # the fake's three chunks, in order
    assert final.model == f"openai/{FIRST}" and final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0


def test_tools_give_tool_use_and_take_tool_results(claude: anthropic.Anthropic, upstream: FakeOpenAI) -> None:
    ask = [{"role": "user", "content": "Weather in Paris?"}]
    message = claude.messages.create(model="switchboard", max_tokens=64, messages=ask, tools=[WEATHER],
                                     tool_choice={"type": "auto"}, extra_body=CHEAP_FIRST)
    assert message.stop_reason == "tool_use"
    use = next(b for b in message.content if b.type == "tool_use")
    assert use.name == "get_weather" and use.input == {"location": "Paris"}
    sent = upstream.bodies[-1]
    assert sent["tools"] == [{"type": "function", "function": {
        "name": "get_weather", "parameters": WEATHER["input_schema"], "description": WEATHER["description"]}}]
    assert sent["tool_choice"] == "auto"
    # the next turn: the assistant's tool_use and the user's tool_result, as OpenAI's tool_calls and tool message
    follow_up = [*ask, {"role": "assistant", "content": [b.model_dump() for b in message.content]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "18 C"},
                                              {"type": "text", "text": "And tomorrow?"}]}]
    claude.messages.create(model="switchboard", max_tokens=64, messages=follow_up, tools=[WEATHER],
                           tool_choice={"type": "tool", "name": "get_weather"}, extra_body=CHEAP_FIRST)
    sent = upstream.bodies[-1]
    assert sent["messages"][1]["tool_calls"][0]["function"] == {"name": "get_weather",
                                                                "arguments": '{"location":"Paris"}'}
    assert sent["messages"][2] == {"role": "tool", "tool_call_id": use.id, "content": "18 C"}
    assert sent["messages"][3] == {"role": "user", "content": "And tomorrow?"}
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}


def test_streamed_tool_use(claude: anthropic.Anthropic, upstream: FakeOpenAI) -> None:
    with claude.messages.stream(model="switchboard", max_tokens=64, tools=[WEATHER], extra_body=CHEAP_FIRST,
                                messages=[{"role": "user", "content": "Weather in Paris?"}]) as stream:
        final = stream.get_final_message()
    use = next(b for b in final.content if b.type == "tool_use")
    assert use.name == "get_weather" and use.input == {"location": "Paris"} and final.stop_reason == "tool_use"


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_failing_first_choice_falls_back(stream: bool, claude: anthropic.Anthropic, upstream: FakeOpenAI,
                                           gateway_api: LocalApi) -> None:
    upstream.failing.add(FIRST)
    if stream:
        with claude.messages.stream(model="switchboard", max_tokens=64, messages=ASK, extra_body=CHEAP_FIRST) as s:
            message = s.get_final_message()
            session_id = s.response.headers["x-switchboard-session-id"]
    else:
        raw = claude.messages.with_raw_response.create(model="switchboard", max_tokens=64, messages=ASK,
                                                       extra_body=CHEAP_FIRST)
        message, session_id = raw.parse(), raw.headers["x-switchboard-session-id"]
    assert message.model == f"openai/{SECOND}" and message.content[0].text == "I do not know."
    assert [b["model"] for b in upstream.bodies] == [FIRST, SECOND]
    # the same record as a chat completion's: both attempts beside the decision
    found = rows(gateway_api, "SELECT answered, status, attempts, attempt_outcomes, output_tokens FROM gateway_calls"
                              f" WHERE session_id = '{session_id}'", 1)
    assert found == [(f"openai/{SECOND}", "ok", 2, ["http_500", "ok"], found[0][4])] and found[0][4] > 0


def test_upstream_errors_take_anthropics_error_shape(claude: anthropic.Anthropic, upstream: FakeOpenAI) -> None:
    upstream.failing.update({FIRST, SECOND, "gpt-4o"})
    with pytest.raises(anthropic.InternalServerError) as failed:
        claude.messages.create(model="switchboard", max_tokens=64, messages=ASK, extra_body=CHEAP_FIRST)
    assert failed.value.status_code == 502
    body = failed.value.body
    assert body["type"] == "error" and body["error"]["type"] == "api_error"
    assert body["error"]["code"] == "upstream_failed" and "no candidate answered" in body["error"]["message"]
    upstream.failing.clear()
    upstream.too_long.update({FIRST, SECOND, "gpt-4o"})  # a context-length refusal on every candidate
    with pytest.raises(anthropic.APIStatusError) as refused:
        claude.messages.create(model="switchboard", max_tokens=64, messages=ASK, extra_body=CHEAP_FIRST)
    assert refused.value.body["type"] == "error" and "sk-upstream-secret" not in refused.value.response.text


def test_a_broken_stream_ends_with_an_error_event(claude: anthropic.Anthropic, upstream: FakeOpenAI) -> None:
    upstream.broken_stream.add(FIRST)
    with pytest.raises(anthropic.APIStatusError, match="not retried"):
        with claude.messages.stream(model="switchboard", max_tokens=64, messages=ASK,
                                    extra_body=CHEAP_FIRST) as stream:
            for _ in stream:
                pass
    assert [b["model"] for b in upstream.bodies] == [FIRST]


def test_bad_requests_are_anthropic_shaped(claude: anthropic.Anthropic, gateway_api: LocalApi,
                                          upstream: FakeOpenAI) -> None:
    with pytest.raises(anthropic.BadRequestError) as missing:
        claude.messages.create(model="switchboard", max_tokens=64, messages=ASK)  # no candidates anywhere
    assert missing.value.body["error"] == {**missing.value.body["error"], "type": "invalid_request_error",
                                           "code": "no_candidates"}
    no_max = httpx.post(f"{gateway_api.base}/v1/messages", headers={"x-api-key": gateway_api.key}, timeout=10,
                        json={"model": "switchboard", "messages": ASK})
    assert no_max.status_code == 400 and "max_tokens" in no_max.json()["error"]["message"]
    bad_block = httpx.post(f"{gateway_api.base}/v1/messages", headers=gateway_api.headers, timeout=10,
                           json={"model": "openai/gpt-4o-mini", "max_tokens": 8,
                                 "messages": [{"role": "user", "content": [{"type": "video"}]}]})
    assert bad_block.status_code == 400 and "messages[0].content[0]" in bad_block.json()["error"]["message"]
    unknown = httpx.post(f"{gateway_api.base}/v1/messages", headers={"x-api-key": "sk-nobody"}, timeout=10,
                         json={"model": "switchboard", "max_tokens": 8, "messages": ASK})
    assert unknown.status_code == 401 and unknown.json()["error"]["type"] == "authentication_error"
    assert upstream.bodies == []


def test_a_concrete_model_is_proxied_and_images_pass_through(claude: anthropic.Anthropic,
                                                             upstream: FakeOpenAI) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    message = claude.messages.create(model="openai/gpt-4o", max_tokens=16, messages=[
        {"role": "user", "content": [image, {"type": "text", "text": "What is this?"}]}])
    assert message.model == "openai/gpt-4o"
    assert upstream.bodies[-1]["messages"][0]["content"] == [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "text", "text": "What is this?"}]


def test_a_conversation_stays_on_the_model_that_answered_it(claude: anthropic.Anthropic, upstream: FakeOpenAI) -> None:
    # The first turn falls back to sticky-b; the next turns, sent whole as Anthropic's clients do (the earlier
    # answers as content blocks, no previous_session), stay on it once sticky-a (within the margin) is back.
    upstream.failing.add("sticky-a")
    conversation: list[dict] = []
    models = []
    for text in ("Plan a weekend in Lisbon.", "Add a day trip to Sintra.", "Now make it cheaper."):
        conversation.append({"role": "user", "content": text})
        message = claude.messages.create(model="switchboard", max_tokens=64, messages=conversation,
                                         extra_body=STICKY_ROUTING)
        upstream.failing.clear()
        conversation.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        models.append(message.model)
    assert models == ["acme/sticky-b"] * 3
    assert [b["model"] for b in upstream.bodies] == ["sticky-a", "sticky-b", "sticky-b", "sticky-b"]
