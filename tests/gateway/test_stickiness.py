"""A conversation stays on the model that answered its previous turn unless the router's first choice beats it by
more than the margin (SWITCHBOARD_GATEWAY_STICKY_MARGIN, 0.05 of utility)."""

from __future__ import annotations

import httpx
import openai

from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi


def custom(model: str, price: float) -> dict:
    return {"provider": "acme", "model": model, "is_custom": True, "context_length": 128000, "input_price": price,
            "output_price": price, "latency": 1.0}


# Pure cost (cost_quality_tradeoff 10): utility is minus the normalised log cost, so sticky-a and sticky-b differ by
# about 0.002 (within the margin) and sticky-a and sticky-c by 1 (beyond it).
ROUTING = {"llm_providers": [custom("sticky-a", 1.0), custom("sticky-b", 1.01), custom("sticky-c", 100.0)],
           "cost_quality_tradeoff": 10}


def turn(oai: openai.OpenAI, conversation: list[dict], text: str, previous: str | None) -> tuple[str, str]:
    """Send one more user turn; returns (the model that answered, the session id), and extends `conversation`."""
    conversation.append({"role": "user", "content": text})
    extra = {**ROUTING, **({"previous_session": previous} if previous else {})}
    raw = oai.chat.completions.with_raw_response.create(model="switchboard", messages=conversation, extra_body=extra)
    completion = raw.parse()
    conversation.append({"role": "assistant", "content": completion.choices[0].message.content})
    return completion.model, raw.headers["x-switchboard-session-id"]


def test_three_turns_stay_on_the_model_that_answered_first(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    upstream.failing.add("sticky-a")  # the first turn falls back to sticky-b
    conversation: list[dict] = []
    first, session = turn(oai, conversation, "Plan a three-day trip to Rome.", None)
    upstream.failing.clear()  # sticky-a is back, and the router's first choice again
    second, session = turn(oai, conversation, "Add a day in Florence.", session)
    third, _ = turn(oai, conversation, "Now make it cheaper.", session)
    assert first == second == third == "acme/sticky-b"
    assert [body["model"] for body in upstream.bodies] == ["sticky-a", "sticky-b", "sticky-b", "sticky-b"]


def test_a_conversation_is_recognised_by_its_messages_without_previous_session(oai: openai.OpenAI,
                                                                               upstream: FakeOpenAI) -> None:
    # What a plain OpenAI client sends: the whole conversation, the previous answers included, and nothing else.
    upstream.failing.add("sticky-a")
    conversation: list[dict] = []
    first, _ = turn(oai, conversation, "Plan a weekend in Lisbon.", None)
    upstream.failing.clear()
    second, _ = turn(oai, conversation, "Add a day trip to Sintra.", None)
    third, _ = turn(oai, conversation, "Now make it cheaper.", None)
    assert first == second == third == "acme/sticky-b"
    # A new conversation (no earlier turns) is routed afresh.
    assert turn(oai, [], "Now make it cheaper.", None)[0] == "acme/sticky-a"


def test_a_streamed_answer_continues_its_conversation_too(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    upstream.failing.add("sticky-a")
    conversation = [{"role": "user", "content": "Name three rivers in Spain."}]
    chunks = list(oai.chat.completions.create(model="switchboard", messages=conversation, extra_body=ROUTING,
                                              stream=True))
    upstream.failing.clear()
    conversation.append({"role": "assistant",
                         "content": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)})
    model, _ = turn(oai, conversation, "Which is the longest?", None)
    assert chunks[0].model == model == "acme/sticky-b"


def test_a_gain_beyond_the_margin_moves_the_conversation(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    upstream.failing.update({"sticky-a", "sticky-b"})  # the first turn ends on sticky-c, far costlier
    conversation: list[dict] = []
    first, session = turn(oai, conversation, "Summarise the plot of Hamlet.", None)
    upstream.failing.clear()
    second, _ = turn(oai, conversation, "Shorter, please.", session)
    assert (first, second) == ("acme/sticky-c", "acme/sticky-a")


def test_an_unknown_previous_session_is_no_conversation(oai: openai.OpenAI, upstream: FakeOpenAI) -> None:
    # An id the log does not hold for this key: the router decides afresh (api/gateway/service.py checks the
    # owner of a session it finds, too).
    model, _ = turn(oai, [], "Add a day in Florence.", "0190c0de-0000-7000-8000-000000000000")
    assert model == "acme/sticky-a"


def test_model_select_follows_a_gateway_turn_on_the_model_that_answered(oai: openai.OpenAI, upstream: FakeOpenAI,
                                                                        gateway_api: LocalApi) -> None:
    # One rule for both (api/selection/sticky.py): modelSelect's previous_session names the model that answered
    # the gateway's turn (sticky-b, after sticky-a failed), not only the one the router chose for it.
    upstream.failing.add("sticky-a")
    first, session = turn(oai, [], "Plan a three-day trip to Rome.", None)
    upstream.failing.clear()
    body = {"messages": [{"role": "user", "content": "Add a day in Florence."}], **ROUTING}
    chosen = [httpx.post(f"{gateway_api.base}/v2/modelRouter/modelSelect", headers=gateway_api.headers, timeout=30,
                         json={**body, **extra}).json()["providers"][0]["model"]
              for extra in ({}, {"previous_session": session})]
    assert first == "acme/sticky-b" and chosen == ["sticky-a", "sticky-b"]
