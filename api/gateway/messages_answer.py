"""The gateway's chat-completions answer as Anthropic's Messages answer: a whole message, or the stream of events
Anthropic's clients read (message_start, content_block_start / _delta / _stop per block, message_delta with the
stop reason and usage, message_stop; an `error` event when the provider fails once the stream has begun). The
stream is rewritten event by event from what api/gateway/relay.py yields, so the relay's guards (size, time,
malformed chunks, redaction, the call's record) hold for both formats."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec

from api.gateway.relay import DONE

# OpenAI's finish_reason -> Anthropic's stop_reason
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
                "content_filter": "refusal"}

def _usage(usage: Any) -> dict[str, int]:
    usage = usage if isinstance(usage, dict) else {}
    return {"input_tokens": int(usage.get("prompt_tokens") or 0), "output_tokens": int(usage.get("completion_tokens")
                                                                                         or 0)}


def _input(arguments: Any) -> Any:
    """A tool call's arguments as the object Anthropic's tool_use carries (the raw text if it is not JSON)."""
    if not isinstance(arguments, str):
        return arguments if isinstance(arguments, dict) else {}
    try:
        return msgspec.json.decode(arguments) if arguments.strip() else {}
    except msgspec.DecodeError:
        return {"_raw_arguments": arguments}


def message_id(chat_id: Any) -> str:
    return f"msg_{chat_id}" if isinstance(chat_id, str) and chat_id else "msg_switchboard"


def whole(body: bytes) -> bytes:
    """A chat completion (already naming the model that answered) as an Anthropic message."""
    answer = msgspec.json.decode(body)
    choice = (answer.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    content: list[dict[str, Any]] = []
    if isinstance(message.get("content"), str) and message["content"]:
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        content.append({"type": "tool_use", "id": call.get("id") or "toolu_switchboard", "name": function.get("name"),
                        "input": _input(function.get("arguments"))})
    return msgspec.json.encode({
        "id": message_id(answer.get("id")), "type": "message", "role": "assistant", "model": answer.get("model"),
        "content": content, "stop_reason": STOP_REASONS.get(choice.get("finish_reason"), "end_turn"),
        "stop_sequence": None, "usage": _usage(answer.get("usage"))})


def sse(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + msgspec.json.encode({"type": kind, **payload}) + b"\n\n"


class StreamTranslation:
    """One stream's state: which content block is open (text, or the tool call with a given OpenAI index)."""

    def __init__(self) -> None:
        self.started = False
        self.block = -1  # the open block's index, -1 when none
        self.open_kind: Any = None  # "text" or ("tool", the OpenAI tool_calls index)
        self.stop_reason = "end_turn"
        self.usage = {"input_tokens": 0, "output_tokens": 0}

    def _start(self, chunk: dict[str, Any]) -> list[bytes]:
        self.started = True
        return [sse("message_start", {"message": {
            "id": message_id(chunk.get("id")), "type": "message", "role": "assistant", "model": chunk.get("model"),
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": dict(self.usage)}})]

    def _close(self) -> list[bytes]:
        if self.open_kind is None:
            return []
        self.open_kind = None
        return [sse("content_block_stop", {"index": self.block})]

    def _open(self, kind: Any, block: dict[str, Any]) -> list[bytes]:
        out = self._close()
        self.block += 1
        self.open_kind = kind
        return [*out, sse("content_block_start", {"index": self.block, "content_block": block})]

    def chunk(self, chunk: dict[str, Any]) -> list[bytes]:
        out = [] if self.started else self._start(chunk)
        if chunk.get("usage"):
            self.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str) and delta["content"]:
                if self.open_kind != "text":
                    out += self._open("text", {"type": "text", "text": ""})
                out.append(sse("content_block_delta", {"index": self.block,
                                                       "delta": {"type": "text_delta", "text": delta["content"]}}))
            for call in delta.get("tool_calls") or ():
                out += self._tool_delta(call)
            if choice.get("finish_reason"):
                self.stop_reason = STOP_REASONS.get(choice["finish_reason"], "end_turn")
        return out

    def _tool_delta(self, call: dict[str, Any]) -> list[bytes]:
        out: list[bytes] = []
        function = call.get("function") or {}
        kind = ("tool", call.get("index", 0))
        if self.open_kind != kind:
            out += self._open(kind, {"type": "tool_use", "id": call.get("id") or f"toolu_{self.block + 1}",
                                     "name": function.get("name"), "input": {}})
        if function.get("arguments"):
            out.append(sse("content_block_delta", {"index": self.block, "delta": {
                "type": "input_json_delta", "partial_json": function["arguments"]}}))
        return out

    def end(self) -> list[bytes]:
        return [*self._close(), sse("message_delta", {"delta": {"stop_reason": self.stop_reason,
                                                                "stop_sequence": None}, "usage": self.usage}),
                sse("message_stop", {})]


async def translated(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The relay's chat-completion events (one `data:` event each) as Anthropic's stream."""
    state = StreamTranslation()
    try:
        async for raw in events:
            for out in _rewritten(raw, state):
                yield out
    finally:  # the caller gone or the stream done: the relay's own cleanup (its provider stream, its record) runs now
        await events.aclose()  # type: ignore[attr-defined]


def _rewritten(raw: bytes, state: StreamTranslation) -> list[bytes]:
    if raw == DONE:
        return state.end()
    try:
        chunk = msgspec.json.decode(raw[5:].strip() if raw.startswith(b"data:") else raw)
    except msgspec.DecodeError:
        return []  # a provider's undecodable event: nothing an Anthropic client could read
    if not isinstance(chunk, dict):
        return []
    if isinstance(chunk.get("error"), dict):  # the relay's own error event: the stream ends with it
        error = chunk["error"]
        return [sse("error", {"error": {"type": "api_error", "message": str(error.get("message")),
                                        "code": error.get("code")}})]
    return state.chunk(chunk)
