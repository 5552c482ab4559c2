"""Issue 31, items 3 and 4, through the real server: a custom model named in any script is answered (its name in
the response headers as an RFC 8187 ext-value), a name holding control characters is refused at the edge before any
upstream call, and a catalogue model described as custom at $0 is billed at the catalogue's price."""

from __future__ import annotations

from urllib.parse import unquote

import httpx
import pytest

from api.catalogue import load_catalogue
from tests.gateway.test_fallbacks import rows
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi

ASK = [{"role": "user", "content": "What is the capital of Italy?"}]


def custom(model: str, price: float = 1.0, provider: str = "mine") -> dict:
    return {"provider": provider, "model": model, "is_custom": True, "context_length": 128000,
            "input_price": price, "output_price": price, "latency": 1.0}


def chat(api: LocalApi, body: dict) -> httpx.Response:
    return httpx.post(f"{api.base}/v1/chat/completions", json=body, headers=api.headers, timeout=30)


@pytest.mark.parametrize("name", ["модель", "model-😀", "模型 v2"])
@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_custom_model_named_in_any_script_is_answered(name: str, stream: bool, gateway_api: LocalApi,
                                                        upstream: FakeOpenAI) -> None:
    answer = chat(gateway_api, {"model": "switchboard", "messages": ASK, "stream": stream,
                                "llm_providers": [custom(name)]})
    assert answer.status_code == 200, answer.text
    assert "x-switchboard-model" not in answer.headers  # not visible ASCII: not in the plain header
    charset, _, encoded = answer.headers["x-switchboard-model*"].partition("''")
    assert charset == "UTF-8" and unquote(encoded, encoding="utf-8") == f"mine/{name}"
    assert encoded.isascii() and " " not in encoded
    assert upstream.bodies[-1]["model"] == name  # the provider was asked for the model by its own name


def test_an_ascii_name_keeps_the_plain_header(gateway_api: LocalApi, upstream: FakeOpenAI) -> None:
    answer = chat(gateway_api, {"model": "switchboard", "messages": ASK, "llm_providers": [custom("plain-1")]})
    assert answer.status_code == 200 and answer.headers["x-switchboard-model"] == "mine/plain-1"


BAD_NAMES = ["bad\r\nx-injected: 1", "nul\x00", "del\x7f", "line\u2028sep", "tail\n", "zero\u200bwidth",
             "x" * 257]


@pytest.mark.parametrize("name", BAD_NAMES, ids=["crlf", "nul", "del", "u2028", "final-newline", "zwsp", "long"])
@pytest.mark.parametrize("where", ["custom", "string", "model"])
def test_a_name_with_control_characters_is_refused_before_any_upstream_call(name: str, where: str,
                                                                            gateway_api: LocalApi,
                                                                            upstream: FakeOpenAI) -> None:
    body: dict = {"model": "switchboard", "messages": ASK}
    if where == "custom":
        body["llm_providers"] = [custom(name)]
    elif where == "string":
        body["llm_providers"] = [f"mine/{name}"]
    else:
        body["model"] = f"mine/{name}"
    answer = chat(gateway_api, body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["request_id"] == answer.headers["x-request-id"] and "regex" not in error["message"]
    if len(name) <= 256:
        assert error["code"] == "invalid_request" and "printable" in error["message"]
    else:  # a custom entry's name is bounded; a plain "provider/model" of that length is no catalogue model
        assert error["code"] == ("invalid_request" if where == "custom" else "unsupported_model")
    assert not upstream.bodies  # refused at the edge: nothing was called, nothing paid


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
def test_a_catalogue_model_described_as_custom_at_zero_is_billed_at_the_catalogues_price(
        stream: bool, gateway_api: LocalApi, upstream: FakeOpenAI) -> None:
    answer = chat(gateway_api, {"model": "switchboard", "messages": ASK, "stream": stream,
                                "llm_providers": [custom("gpt-4o", price=0.0, provider="openai")]})
    assert answer.status_code == 200, answer.text
    session_id = answer.headers["x-switchboard-session-id"]
    found = rows(gateway_api, "SELECT input_tokens, output_tokens, cost_usd FROM gateway_calls "
                 f"WHERE session_id = '{session_id}'", 1)
    tokens_in, tokens_out, cost = found[0]
    gpt4o = load_catalogue().get("openai", "gpt-4o")
    assert tokens_in > 0 and tokens_out > 0
    assert cost == pytest.approx((tokens_in * gpt4o.input_price + tokens_out * gpt4o.output_price) / 1e6)
    assert cost > 0


def test_a_model_the_catalogue_lacks_is_billed_at_its_declared_price(gateway_api: LocalApi,
                                                                     upstream: FakeOpenAI) -> None:
    answer = chat(gateway_api, {"model": "switchboard", "messages": ASK,
                                "llm_providers": [custom("house-model", price=3.0)]})
    session_id = answer.headers["x-switchboard-session-id"]
    tokens_in, tokens_out, cost = rows(gateway_api, "SELECT input_tokens, output_tokens, cost_usd FROM gateway_calls"
                                       f" WHERE session_id = '{session_id}'", 1)[0]
    assert cost == pytest.approx((tokens_in + tokens_out) * 3.0 / 1e6)
