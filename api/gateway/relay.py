"""Relaying a provider's server-sent events to the caller: each chunk names the model that answers, the usage
chunk (always asked of the provider) reaches the caller only if it asked for it, and a failure once the stream has
begun ends it with an error event the official client raises as an APIError (never a retry: the caller has bytes):
an error the provider sent (its message scrubbed, api/gateway/redaction.py), a malformed chunk, a broken or
too-slow transfer, an answer past the size bound.

Lines are read and relayed as bytes (no text decoding but a UTF-8 check), each event decoded once for all its checks
and rewrites; the first event, read and checked before the caller's stream begins, leaves at once."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from api.gateway.bodies import TooLarge
from api.gateway.calls import Call

DONE = b"data: [DONE]\n\n"


_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


def event(payload: Any) -> bytes:
    return b"data: " + _encode(payload) + b"\n\n"


def error_event(message: str, code: str) -> bytes:
    return event({"error": {"message": message, "type": "api_error", "param": None, "code": code}})


def payload(line: bytes) -> bytes:
    """A `data:` line's payload, as valid UTF-8 (a provider's invalid bytes replaced, as a decoder would): an event
    that does not decode is relayed as sent, so its text is checked here. ASCII, the usual case, is one scan."""
    data = line[5:].strip()
    if data.isascii():
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8")
    return data


async def first_data(lines: AsyncIterator[bytes]) -> bytes | None:
    """The first `data:` payload of a stream (None if it ended without one); comments and blank lines skipped."""
    async for line in lines:
        if line.startswith(b"data:"):
            return payload(line)
    return None


def parsed(data: bytes) -> dict[str, Any] | None:
    """An event's payload, decoded once for every check and rewrite; None when it is not a JSON object (relayed as
    sent) or `[DONE]`."""
    if data == b"[DONE]":
        return None
    try:
        chunk = _decode(data)
    except msgspec.DecodeError:
        return None
    return chunk if isinstance(chunk, dict) else None


def upstream_error(chunk: dict[str, Any] | None) -> str | None:
    """The message of an error a provider sent as an event (some do, after a 200), else None."""
    if chunk is None or not chunk.get("error"):
        return None
    error = chunk["error"]
    return str(error.get("message", error)) if isinstance(error, dict) else str(error)


class Malformed(Exception):
    """A chunk no OpenAI client could read (its `choices` not a list of objects): the stream ends there."""


def check_choices(choices: Any) -> None:
    if choices is not None and not (isinstance(choices, list) and all(isinstance(c, dict) for c in choices)):
        raise Malformed("a chunk whose choices are not a list of objects")


def well_formed(chunk: dict[str, Any] | None) -> bool:
    """Whether a first event may begin the caller's stream (else the next candidate answers instead); an event that
    is not a JSON object is relayed as sent, as any other undecodable event."""
    try:
        check_choices(chunk.get("choices") if chunk is not None else None)
    except Malformed:
        return False
    return True


def rewrite(data: bytes, chunk: dict[str, Any] | None, model: str, want_usage: bool, call: Call) -> bytes | None:
    """One event as the caller gets it (None: dropped), `chunk` being `parsed(data)`: naming `model`, its usage
    counted and kept only if the caller asked for it. Encoded anew with msgspec: measured cheaper than splicing the
    name into the provider's bytes in Python (docs/benchmarks.md, issue 36, streamed time to first token)."""
    if data == b"[DONE]":
        return DONE
    if chunk is None:
        return b"data: " + data + b"\n\n"
    choices = chunk.get("choices")
    check_choices(choices)
    if "usage" in chunk:
        call.usage(chunk["usage"])  # kept only when sane (api/gateway/calls.py); else the call is estimated
        if not want_usage:
            if not choices:
                return None  # the usage-only chunk the caller did not ask for
            del chunk["usage"]
    if "model" in chunk:
        chunk["model"] = model
    if choices and isinstance(choices[0].get("delta"), dict):
        content = choices[0]["delta"].get("content")
        if isinstance(content, str):
            call.answer_parts.append(content)
    return event(chunk)


def broken(exc: BaseException) -> tuple[str, str]:
    """(what is recorded, what the caller's error event says) for a stream that ended in `exc`."""
    if isinstance(exc, TooLarge):
        return "too_large", f"{exc}; the answer is incomplete"
    if isinstance(exc, Malformed):
        return "bad_chunk", f"the provider sent {exc}; the answer is incomplete"
    if isinstance(exc, TimeoutError):
        return "timeout", ("the provider's stream passed its time limit (SWITCHBOARD_GATEWAY_FIRST_BYTE_TIMEOUT_S "
                           "between events, SWITCHBOARD_GATEWAY_ATTEMPT_TOTAL_TIMEOUT_S in all); the answer is "
                           "incomplete")
    return (f"{type(exc).__name__} after the stream began",
            f"the provider's stream broke ({type(exc).__name__}); the answer is incomplete and was not retried, "
            "since part of it had been sent")


async def relay(response: Any, lines: AsyncIterator[bytes], first: bytes, first_chunk: dict[str, Any] | None,
                model: str,
                want_usage: bool, call: Call, finish: Callable[[Call], None],
                errors: tuple[type[BaseException], ...], scrub: Callable[[str], str],
                release: Callable[[], None] = lambda: None) -> AsyncIterator[bytes]:
    """`response`: the provider's (aiohttp) response, released to the pool at a clean end and closed otherwise;
    `first` / `first_chunk`: its first event, already read and parsed (api/gateway/service.py checked it), which
    leaves at once, before anything else is read; `errors`: what a broken transfer raises; `scrub`: the redaction
    every provider text passes; `finish` records the call, once: before the final `[DONE]` leaves (a follow-up turn
    may arrive before this generator resumes), else when the stream ends another way; `release` frees the call's
    admission slots (api/gateway/admission.py)."""
    call.status, call.http_status = "client_closed", 200  # until the stream ends one way or the other
    broken_by: tuple[type[BaseException], ...] = (*errors, Malformed)
    finished = False
    try:
        out = rewrite(first, first_chunk, model, want_usage, call)
        call.ttft_ms = call.since_start_ms()
        if out:
            yield out
        async for line in lines:
            if not line.startswith(b"data:"):
                continue
            data = payload(line)
            chunk = parsed(data)
            problem = upstream_error(chunk)
            if problem is not None:
                call.status, call.error = "stream_error", scrub(problem)
                yield error_event(f"the provider failed during the stream: {call.error}", "upstream_stream_error")
                return
            out = rewrite(data, chunk, model, want_usage, call)
            if out is DONE:
                call.status, call.latency_ms, finished = "ok", call.since_start_ms(), True
                finish(call)
            if out:
                yield out
        call.status = "ok"
    except broken_by as exc:
        call.status, (call.error, told) = "stream_error", broken(exc)
        yield error_event(told, "upstream_stream_error")
    finally:
        if not finished:
            call.latency_ms = call.since_start_ms()
        try:
            response.release() if call.status == "ok" else response.close()
        finally:
            release()
            if not finished:
                finish(call)
