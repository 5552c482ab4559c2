"""The gateway's guards against upstreams, in process: the one scrub, the admission slots and their bounded wait,
the linear stream line reader with its size bound, and the token-count check (issue 31). The same behaviours through
the real server: tests/gateway/test_hostile_upstream.py."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from typing import Any

import pytest

from api.gateway.admission import Admission, Slots
from api.gateway.calls import MAX_REPORTED_TOKENS, Call, token_count
from api.gateway.redaction import REDACTED, Scrubber
from api.gateway.bodies import INFLATE_STEP, BadEncoding, Inflater, TooLarge, lines
from api.gateway.upstream import failed_status
from storage.records import User

SECRET = "sk-this-servers-own-key-0123456789"


@pytest.mark.parametrize("text", [
    f"Incorrect API key provided: {SECRET}",
    "upstream said: Authorization: Bearer abc.def-ghi_123",
    "proxy key sk-proj-AbCdEfGhIjKlMnOpQrStUv0123 refused",
    "google key AIzaSyA-1234567890abcdefghijklmnopqrs expired",
    "xai key xai-AbCdEfGhIjKlMnOpQrSt0123 is invalid",
    "token 9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928 leaked",
])
def test_every_key_shape_is_scrubbed(text: str) -> None:
    scrubbed = Scrubber((SECRET,))(text)
    assert REDACTED in scrubbed
    for part in text.split():
        if len(part) >= 20:
            assert part not in scrubbed


def test_ordinary_error_text_is_kept_and_cut() -> None:
    scrub = Scrubber((SECRET,), limit=40)
    assert scrub("This model's maximum context length is 8192 tokens.") == "This model's maximum context length is 8"
    assert scrub("x" * 10_000_000).startswith("x") and len(scrub("x" * 10_000_000)) == 40


def test_a_slot_is_handed_to_the_first_in_line_and_a_wait_is_bounded() -> None:
    async def play() -> None:
        slots = Slots(1)
        assert await slots.acquire("a", 0)
        assert not await slots.acquire("a", 0.01)  # bounded: gives up
        waiting = asyncio.ensure_future(slots.acquire("a", 5))
        await asyncio.sleep(0.01)
        slots.release("a")
        assert await waiting and slots.held("a") == 1  # handed over, not double-counted
        slots.release("a")
        assert slots.held("a") == 0

    asyncio.run(play())


def test_a_waiter_that_is_cancelled_leaves_no_slot_behind() -> None:
    async def play() -> None:
        slots = Slots(1)
        await slots.acquire("a", 0)
        waiting = asyncio.ensure_future(slots.acquire("a", 5))
        await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        slots.release("a")
        assert slots.held("a") == 0 and await slots.acquire("a", 0)

    asyncio.run(play())


def test_admission_names_the_bound_that_was_full_and_releases_the_others() -> None:
    async def play() -> None:
        gate = Admission(pool=2, per_upstream=1, per_key=1, wait_s=0.01)
        first = await gate.enter("alice", "u1")
        assert await gate.enter("alice", "u2") == "key"
        assert await gate.enter("bob", "u1") == "upstream"
        second = await gate.enter("bob", "u2")
        assert await gate.enter("carol", "u3") == "pool"
        assert gate.keys.held("carol") == 0 and gate.upstreams.held("u3") == 0  # nothing kept by the refusal
        for lease in (first, second):
            assert not isinstance(lease, str)
            lease.release()
            lease.release()  # once only
        assert gate.pool.held("") == 0

    asyncio.run(play())


class Body:
    """An aiohttp response body stand-in: readany() hands out the given chunks, then b''."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    async def readany(self) -> bytes:
        return self.chunks.pop(0) if self.chunks else b""


class Response:
    def __init__(self, chunks: list[bytes]) -> None:
        self.content, self.headers = Body(chunks), dict[str, str]()


def read_lines(chunks: list[bytes], limit: int = 1 << 20) -> list[bytes]:
    async def collect() -> list[bytes]:
        return [line async for line in lines(Response(chunks), limit)]  # type: ignore[arg-type]
    return asyncio.run(collect())


def test_lines_split_across_chunks_and_a_long_line_arrive_whole() -> None:
    long = b"y" * 300_000
    chunks = [b"data: a\r\n", b"da", b"ta: b\n\n: comment\ndata: "] + [long[i:i + 1000] for i in range(0, len(long),
                                                                                                    1000)] + [b"\nend"]
    assert read_lines(chunks) == [b"data: a", b"data: b", b"", b": comment", b"data: " + long, b"end"]


def test_a_stream_past_its_size_bound_raises() -> None:
    with pytest.raises(TooLarge, match="SWITCHBOARD_GATEWAY_MAX_RESPONSE_BYTES"):
        read_lines([b"x" * 600, b"x" * 600], limit=1000)


def test_a_gzip_bomb_is_inflated_no_further_than_the_bound() -> None:
    bomb = gzip.compress(b" " * 50_000_000)
    inflater, pieces = Inflater("gzip", 1_000_000), []
    with pytest.raises(TooLarge):
        for i in range(0, len(bomb), 65536):
            for piece in inflater.pieces(bomb[i:i + 65536]):
                pieces.append(len(piece))
    assert inflater.total == 1_000_001  # one byte past the bound, however much more the body would make
    assert max(pieces) == INFLATE_STEP  # in steps, the event loop served between them


def test_an_encoding_not_offered_or_a_body_that_does_not_inflate_is_refused() -> None:
    with pytest.raises(BadEncoding):
        Inflater("br", 1000)
    with pytest.raises(BadEncoding):
        list(Inflater("gzip", 1000).pieces(b"not gzip at all"))
    assert b"".join(Inflater("deflate", 1000).pieces(zlib.compress(b"hello"))) == b"hello"


@pytest.mark.parametrize("value, expected", [(12, 12), (0, 0), (-1, None), ("12", None), (True, None), (1.5, None),
                                             (10**30, None), (2**63, None), (MAX_REPORTED_TOKENS, MAX_REPORTED_TOKENS)])
def test_token_counts_are_checked(value: Any, expected: int | None) -> None:
    assert token_count(value) == expected


def test_a_call_with_unusable_usage_is_estimated_from_its_text() -> None:
    call = Call(User("u", "o", "free", False, False), "s", "switchboard", "routed", False)
    call.messages = [{"role": "user", "content": "What is the capital of Italy?"}]
    call.answer_parts.append("Rome is the capital of Italy.")
    call.usage({"prompt_tokens": -5, "completion_tokens": 3})
    assert not call.needs_estimate()  # nobody answered: nothing was paid for
    call.answered = object()  # type: ignore[assignment]
    assert call.needs_estimate()
    call.estimate_usage()
    assert call.usage_estimated and 5 <= call.input_tokens <= 12 and 5 <= call.output_tokens <= 12


@pytest.mark.parametrize("status", [101, 201, 204, 304])
def test_a_success_or_informational_status_is_a_retryable_502(status: int) -> None:
    failure = failed_status(status, b"")
    assert failure.retryable and failure.status == 502


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_its_own_outcome(status: int) -> None:
    failure = failed_status(status, b"")
    assert failure.outcome == "redirect" and failure.retryable and failure.status == 502
