"""Relaying a provider's server-sent events to the caller: each chunk names the model that answers, the usage
chunk (always asked of the provider) reaches the caller only if it asked for it, and a failure once the stream has
begun ends it with an error event the official client raises as an APIError (never a retry: the caller has bytes)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import msgspec

from api.gateway.calls import Call

DONE = b"data: [DONE]\n\n"


def event(payload: Any) -> bytes:
    return b"data: " + msgspec.json.encode(payload) + b"\n\n"


def error_event(message: str, code: str) -> bytes:
    return event({"error": {"message": message, "type": "api_error", "param": None, "code": code}})


async def first_data(lines: AsyncIterator[str]) -> str | None:
    """The first `data:` payload of a stream (None if it ended without one); comments and blank lines skipped."""
    async for line in lines:
        if line.startswith("data:"):
            return line[5:].strip()
    return None


def upstream_error(data: str) -> str | None:
    """The message of an error a provider sent as an event (some do, after a 200), else None."""
    if '"error"' not in data:
        return None
    try:
        chunk = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    if isinstance(chunk, dict) and chunk.get("error"):
        error = chunk["error"]
        return str(error.get("message", error)) if isinstance(error, dict) else str(error)
    return None


def rewrite(data: str, model: str, want_usage: bool, call: Call) -> bytes | None:
    if data == "[DONE]":
        return DONE
    try:
        chunk = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return f"data: {data}\n\n".encode()
    if not isinstance(chunk, dict):
        return f"data: {data}\n\n".encode()
    if "usage" in chunk:
        if chunk["usage"]:
            call.usage(chunk["usage"])
        if not want_usage:
            if not chunk.get("choices"):
                return None  # the usage-only chunk the caller did not ask for
            del chunk["usage"]
    if "model" in chunk:
        chunk["model"] = model
    choices = chunk.get("choices")
    if choices and isinstance(choices[0], dict) and isinstance(choices[0].get("delta"), dict):
        content = choices[0]["delta"].get("content")
        if isinstance(content, str):
            call.answer_parts.append(content)
    return event(chunk)


async def relay(response: Any, lines: AsyncIterator[str], first: str, model: str, want_usage: bool, call: Call,
                finish: Callable[[Call], None], errors: tuple[type[BaseException], ...]) -> AsyncIterator[bytes]:
    """`response`: the provider's (aiohttp) response, released to the pool at a clean end and closed otherwise;
    `errors`: what a broken transfer raises; `finish` records the call, once: before the final `[DONE]` leaves
    (a follow-up turn may arrive before this generator resumes), else when the stream ends another way."""
    call.status, call.http_status = "client_closed", 200  # until the stream ends one way or the other
    finished = False
    try:
        out = rewrite(first, model, want_usage, call)
        call.ttft_ms = call.since_start_ms()
        if out:
            yield out
        async for line in lines:
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            problem = upstream_error(data)
            if problem is not None:
                call.status, call.error = "stream_error", problem[:500]
                yield error_event(f"the provider failed during the stream: {problem[:500]}", "upstream_stream_error")
                return
            out = rewrite(data, model, want_usage, call)
            if out is DONE:
                call.status, call.latency_ms, finished = "ok", call.since_start_ms(), True
                finish(call)
            if out:
                yield out
        call.status = "ok"
    except errors as exc:
        call.status, call.error = "stream_error", f"{type(exc).__name__} after the stream began"
        yield error_event(f"the provider's stream broke ({type(exc).__name__}); the answer is incomplete and was "
                          "not retried, since part of it had been sent", "upstream_stream_error")
    finally:
        if not finished:
            call.latency_ms = call.since_start_ms()
        try:
            response.release() if call.status == "ok" else response.close()
        finally:
            if not finished:
                finish(call)
