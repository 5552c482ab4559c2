"""The streamed answer's path (issue 36): the first event leaves as soon as the provider sends it, not with the next
one; each event, decoded once, names the catalogue's model and keeps the rest; the upstream's connection is kept and
reused from call to call. In process (the relay driven by
hand), then through the real server against a keep-alive fake provider that can hold a stream after its first event."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from api.gateway.calls import Call
from api.gateway.redaction import Scrubber
from api.gateway.relay import DONE, parsed, payload, relay, rewrite
from storage.records import User
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi, running_api

MODEL = "openai/gpt-4o-mini"  # the catalogue's name, which every relayed event carries


def a_call() -> Call:
    return Call(User("u", "o", "free", False, False), "s", MODEL, "proxy", True)


def relayed(data: bytes, want_usage: bool = False, call: Call | None = None) -> bytes | None:
    return rewrite(data, parsed(data), MODEL, want_usage, call or a_call())


def sent(out: bytes | None) -> dict:
    assert out is not None and out.startswith(b"data: ") and out.endswith(b"\n\n")
    return json.loads(out[6:])


def test_a_chunk_names_the_catalogue_model_and_keeps_everything_else() -> None:
    data = (b'{"id":"c1", "object":"chat.completion.chunk","model" : "gpt-4o-mini-2024-07-18","choices":[{"index":0,'
            b'"delta":{"content":"caf\xc3\xa9 \\"quoted\\""},"finish_reason":null,"extra":{"model":"m"}}],"x":1.5}')
    call = a_call()
    assert sent(relayed(data, call=call)) == {**json.loads(data), "model": MODEL}  # the nested "model" untouched
    assert call.answer_parts == ['caf\u00e9 "quoted"']


def test_usage_is_counted_and_reaches_the_caller_only_if_it_asked() -> None:
    usage_only = b'{"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}'
    call = a_call()
    assert relayed(usage_only, want_usage=False, call=call) is None
    assert (call.input_tokens, call.output_tokens, call.usage_reported) == (5, 7, True)
    assert sent(relayed(usage_only, want_usage=True)) == {**json.loads(usage_only), "model": MODEL}
    riding = b'{"model":"m","choices":[{"delta":{"content":"x"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}'
    assert sent(relayed(riding, want_usage=False)) == {"model": MODEL, "choices": [{"delta": {"content": "x"}}]}


def test_done_and_undecodable_events_pass_as_sent_and_invalid_utf8_is_replaced() -> None:
    assert relayed(b"[DONE]") == DONE
    assert relayed(b"not json at all") == b"data: not json at all\n\n"
    assert relayed(b'["an", "array"]') == b'data: ["an", "array"]\n\n'
    assert payload(b'data: {"a":"caf\xc3\xa9"} ') == b'{"a":"caf\xc3\xa9"}'
    assert payload(b'data: {"a":"\xff"}') == '{"a":"\ufffd"}'.encode()


class Upstream:
    """An aiohttp response stand-in: which way the relay let go of it."""

    def __init__(self) -> None:
        self.released = self.closed = False

    def release(self) -> None:
        self.released = True

    def close(self) -> None:
        self.closed = True


async def source(lines: list[bytes], produced: list[int]) -> AsyncIterator[bytes]:
    for line in lines:
        produced.append(len(produced))
        yield line


def drive(first: bytes, rest: list[bytes]) -> tuple[list[tuple[int, bytes]], Call, Upstream, list[Call]]:
    """Run the relay; each event it yields comes with how many lines the provider had produced by then."""
    call, response, finished, produced = a_call(), Upstream(), [], []

    async def run() -> list[tuple[int, bytes]]:
        got = []
        async for out in relay(response, source(rest, produced), first, parsed(first), MODEL, False,
                               call, finished.append, (OSError,), Scrubber(("sk-secret-0123456789abcdef",))):
            got.append((len(produced), out))
        return got

    return asyncio.run(run()), call, response, finished


def test_the_first_event_leaves_before_the_provider_is_read_again() -> None:
    first = b'{"model":"m","choices":[{"delta":{"role":"assistant","content":""}}]}'
    rest = [b'data: {"model":"m","choices":[{"delta":{"content":"Hi"}}]}', b"", b": keep-alive", b"data: [DONE]"]
    got, call, response, finished = drive(first, rest)
    assert got[0][0] == 0  # it left before anything else was read from the provider
    assert sent(got[0][1])["model"] == MODEL and sent(got[1][1])["choices"][0]["delta"]["content"] == "Hi"
    assert got[2][1] == DONE and len(got) == 3
    assert call.status == "ok" and call.answer_parts == ["", "Hi"] and finished == [call] and response.released


def test_an_error_event_is_scrubbed_and_ends_the_stream() -> None:
    first = b'{"model":"m","choices":[{"delta":{"content":"a"}}]}'
    got, call, response, finished = drive(first, [
        b'data: {"error":{"message":"bad key sk-secret-0123456789abcdef"}}', b"data: [DONE]"])
    assert len(got) == 2 and b"sk-secret" not in got[1][1] and b"upstream_stream_error" in got[1][1]
    assert call.status == "stream_error" and "sk-secret" not in (call.error or "") and response.closed


def test_a_malformed_chunk_ends_the_stream_with_an_error_event() -> None:
    first = b'{"model":"m","choices":[{"delta":{"content":"a"}}]}'
    got, call, _, finished = drive(first, [b'data: {"model":"m","choices":{"not":"a list"}}'])
    assert call.status == "stream_error" and call.error == "bad_chunk" and finished == [call]
    assert b"not a list of objects" in got[-1][1]


# --- through the real server ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keep_alive_upstream() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(keep_alive=True).start()  # chunked streams on kept connections, as providers answer
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def api(keep_alive_upstream: FakeOpenAI) -> Iterator[LocalApi]:
    with running_api({"SWITCHBOARD_LLM_API_BASE": keep_alive_upstream.base_url,
                      "SWITCHBOARD_LLM_API_KEY": "sk-upstream-secret-0123456789"}) as server:
        yield server


def test_the_first_event_reaches_the_caller_before_the_provider_sends_its_second(api: LocalApi,
                                                                               keep_alive_upstream: FakeOpenAI) -> None:
    gate = threading.Event()
    keep_alive_upstream.held["gpt-4o"] = gate  # its streams stop after their first event until the gate opens
    try:
        body = {"model": "openai/gpt-4o", "stream": True, "messages": [{"role": "user", "content": "Say hi."}]}
        # The provider waits up to 30 s for the gate; a gateway holding the first event would time this read out.
        with httpx.Client(timeout=httpx.Timeout(20.0)) as client, client.stream(
                "POST", f"{api.base}/v1/chat/completions", json=body, headers=api.headers) as response:
            assert response.status_code == 200
            events = (line for line in response.iter_lines() if line.startswith("data:"))
            first = json.loads(next(events)[5:])
            assert first["model"] == "openai/gpt-4o" and first["choices"][0]["delta"]["role"] == "assistant"
            gate.set()  # only now may the provider send the rest
            rest = list(events)
        assert rest[-1] == "data: [DONE]" and len(rest) >= 2
        assert keep_alive_upstream.hold_timeouts == 0  # the provider was let go by the test, not by its timeout
    finally:
        keep_alive_upstream.held.clear()


def test_calls_to_one_upstream_reuse_its_connection(api: LocalApi, keep_alive_upstream: FakeOpenAI) -> None:
    ask = [{"role": "user", "content": "Say hi."}]
    with httpx.Client(timeout=30) as client:
        client.post(f"{api.base}/v1/chat/completions", json={"model": "openai/gpt-4o-mini", "messages": ask},
                    headers=api.headers).raise_for_status()  # a pooled connection, if none was yet
        before, served = keep_alive_upstream.connections, len(keep_alive_upstream.bodies)
        for stream in [False, True] * 5:
            body = {"model": "openai/gpt-4o-mini", "messages": ask, "stream": stream}
            with client.stream("POST", f"{api.base}/v1/chat/completions", json=body, headers=api.headers) as r:
                assert r.status_code == 200
                r.read()
    assert len(keep_alive_upstream.bodies) - served == 10
    assert keep_alive_upstream.connections == before  # ten calls, streamed and not, on the connection already open
