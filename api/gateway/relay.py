"""Relaying a provider's server-sent events to the caller: each chunk names the model that answers, the usage
chunk (always asked of the provider) reaches the caller only if it asked for it, and a failure once the stream has
begun ends it with an error event the official client raises as an APIError (never a retry: the caller has bytes).

Per chunk, the common case (a content delta) is read with a typed decode of the delta's text only and relayed as
the provider's bytes with the model's name spliced in; a chunk carrying usage or an error, or one the splice cannot
be sure of, is decoded and encoded whole."""

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


async def first_data(lines: AsyncIterator[bytes]) -> bytes | None:
    """The first `data:` payload of a stream (None if it ended without one); comments and blank lines skipped."""
    async for line in lines:
        if line.startswith(b"data:"):
            return line[5:].strip()
    return None


def upstream_error(data: bytes) -> str | None:
    """The message of an error a provider sent as an event (some do, after a 200), else None."""
    if b'"error"' not in data:
        return None
    try:
        chunk = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None
    if isinstance(chunk, dict) and chunk.get("error"):
        error = chunk["error"]
        return str(error.get("message", error)) if isinstance(error, dict) else str(error)
    return None


class _Delta(msgspec.Struct):
    content: Any = None


class _Choice(msgspec.Struct):
    delta: _Delta | None = None


class _Chunk(msgspec.Struct):
    """What the fast path reads of a chunk."""

    choices: list[_Choice] = []
    model: Any = None


class Rewriter:
    """Rewrites one stream's chunks for the caller; `model` is the catalogue's provider/model."""

    def __init__(self, model: str, want_usage: bool, call: Call) -> None:
        self.model, self.want_usage, self.call = model, want_usage, call
        self.written: tuple[bytes, bytes] | None = None  # (the provider's model field as written, ours)

    def __call__(self, data: bytes) -> bytes | None:
        if data == b"[DONE]":
            return DONE
        if b'"usage"' not in data:
            out = self._spliced(data)
            if out is not None:
                return out
        return self._whole(data)

    def _spliced(self, data: bytes) -> bytes | None:
        try:
            chunk = msgspec.json.decode(data, type=_Chunk)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if not isinstance(chunk.model, str):
            return None
        if self.written is None or not self.written[0].endswith(msgspec.json.encode(chunk.model)):
            self.written = None
            value = msgspec.json.encode(chunk.model)
            for sep in (b":", b": "):
                if data.count(b'"model"' + sep + value) == 1:
                    self.written = (b'"model"' + sep + value, b'"model"' + sep + msgspec.json.encode(self.model))
                    break
            if self.written is None:
                return None
        if data.count(self.written[0]) != 1:  # a key's quote cannot occur unescaped in a string: one is the field
            return None
        if chunk.choices and chunk.choices[0].delta is not None and isinstance(chunk.choices[0].delta.content, str):
            self.call.answer_parts.append(chunk.choices[0].delta.content)
        return b"data: " + data.replace(*self.written) + b"\n\n"

    def _whole(self, data: bytes) -> bytes | None:
        try:
            chunk = msgspec.json.decode(data)
        except msgspec.DecodeError:
            return b"data: " + data + b"\n\n"
        if not isinstance(chunk, dict):
            return b"data: " + data + b"\n\n"
        if "usage" in chunk:
            if chunk["usage"]:
                self.call.usage(chunk["usage"])
            if not self.want_usage:
                if not chunk.get("choices"):
                    return None  # the usage-only chunk the caller did not ask for
                del chunk["usage"]
        if "model" in chunk:
            chunk["model"] = self.model
        choices = chunk.get("choices")
        if choices and isinstance(choices[0], dict) and isinstance(choices[0].get("delta"), dict):
            content = choices[0]["delta"].get("content")
            if isinstance(content, str):
                self.call.answer_parts.append(content)
        return event(chunk)


async def relay(response: Any, lines: AsyncIterator[bytes], first: bytes, model: str, want_usage: bool, call: Call,
                finish: Callable[[Call], None], errors: tuple[type[BaseException], ...]) -> AsyncIterator[bytes]:
    """`response`: the provider's (aiohttp) response, released to the pool at a clean end and closed otherwise;
    `errors`: what a broken transfer raises; `finish` records the call, once: before the final `[DONE]` leaves
    (a follow-up turn may arrive before this generator resumes), else when the stream ends another way."""
    call.status, call.http_status = "client_closed", 200  # until the stream ends one way or the other
    rewrite = Rewriter(model, want_usage, call)
    finished = False
    try:
        out = rewrite(first)
        call.ttft_ms = call.since_start_ms()
        if out:
            yield out
        async for line in lines:
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            problem = upstream_error(data)
            if problem is not None:
                call.status, call.error = "stream_error", problem[:500]
                yield error_event(f"the provider failed during the stream: {problem[:500]}", "upstream_stream_error")
                return
            out = rewrite(data)
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
