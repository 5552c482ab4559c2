"""Anthropic's Messages request (POST /v1/messages) as the chat-completions body the gateway already routes, calls,
falls back on and records: one decision path for both formats. The upstreams speak OpenAI's wire format
(api/gateway/upstream.py), so the request is translated here and the answer back in api/gateway/messages_answer.py.

What maps: `system` (a string or text blocks) becomes the first system message; content blocks `text`, `image`
(base64 or URL, passed through as an image part), `tool_use` (an assistant's tool calls) and `tool_result` (one
`tool` message each); `tools`, `tool_choice` (auto, any, tool, none; `disable_parallel_tool_use`), `max_tokens`,
`stop_sequences`, `temperature`, `top_p`, `metadata.user_id`, `stream`. Anthropic-only fields no OpenAI-compatible
upstream reads (`top_k`, `thinking`, `service_tier`, ...) are dropped; thinking blocks in a history too. The routing
fields (`llm_providers`, `cost_quality_tradeoff`, ...; the anthropic client sends them through `extra_body`) are
read by the gateway exactly as on /v1/chat/completions."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from api.errors import BadRequest
from api.gateway.wire import ROUTING_FIELDS
from api.schemas.common import QualifiedModel, readable

DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})  # a model's own reasoning: no OpenAI equivalent


class MessagesRequest(msgspec.Struct):
    """The fields read; the rest of the body is checked by the translation below."""

    model: QualifiedModel
    max_tokens: Annotated[int, msgspec.Meta(ge=1)]
    messages: Annotated[list[dict[str, Any]], msgspec.Meta(min_length=1)]
    system: str | list[dict[str, Any]] | None = None
    stream: bool | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    metadata: dict[str, Any] | None = None


def parse(body: dict[str, Any]) -> MessagesRequest:
    try:
        return msgspec.convert(body, MessagesRequest)
    except msgspec.ValidationError as exc:
        raise BadRequest(readable(str(exc)).replace(" - at `$", " at `"), code="INVALID_REQUEST") from None


def _bad(where: str, problem: str) -> BadRequest:
    return BadRequest(f"{where}: {problem}", code="INVALID_REQUEST")


def _text_of(content: Any, where: str) -> str:
    """A string, or text blocks joined: what a system prompt or a tool result holds."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(where, "expected a string or a list of content blocks")
    parts = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise _bad(f"{where}[{i}]", "only text blocks are accepted here")
        parts.append(block["text"])
    return "\n".join(parts)


def _image_part(block: dict[str, Any], where: str) -> dict[str, Any]:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        url = f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    elif isinstance(source, dict) and source.get("type") == "url" and isinstance(source.get("url"), str):
        url = source["url"]
    else:
        raise _bad(where, "an image's source must be {type: base64, media_type, data} or {type: url, url}")
    return {"type": "image_url", "image_url": {"url": url}}


def _user_messages(content: list[Any], where: str) -> list[dict[str, Any]]:
    """A user turn: its tool results first (each a `tool` message answering the previous assistant's call, as
    OpenAI requires), then what the user wrote."""
    results, parts = [], []
    for i, block in enumerate(content):
        at = f"{where}[{i}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append(_image_part(block, at))
        elif kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            text = _text_of(block.get("content", ""), f"{at}.content")
            results.append({"role": "tool", "tool_call_id": block["tool_use_id"],
                            "content": f"Error: {text}" if block.get("is_error") else text})
        elif kind not in DROPPED_BLOCKS:
            raise _bad(at, f"content block type {kind!r} is not supported here (text, image, tool_result)")
    if not parts:
        return results
    if all(p["type"] == "text" for p in parts):  # plain text: what the router's featurizer reads best
        return [*results, {"role": "user", "content": "\n".join(p["text"] for p in parts)}]
    return [*results, {"role": "user", "content": parts}]


def _assistant_message(content: list[Any], where: str) -> dict[str, Any]:
    texts, calls = [], []
    for i, block in enumerate(content):
        at = f"{where}[{i}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
            calls.append({"id": block["id"], "type": "function",
                          "function": {"name": block["name"],
                                       "arguments": msgspec.json.encode(block.get("input") or {}).decode()}})
        elif kind not in DROPPED_BLOCKS:
            raise _bad(at, f"content block type {kind!r} is not supported in an assistant turn (text, tool_use)")
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
    if calls:
        message["tool_calls"] = calls
    return message


def chat_messages(req: MessagesRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if req.system is not None:
        out.append({"role": "system", "content": _text_of(req.system, "system")})
    for i, message in enumerate(req.messages):
        where, role, content = f"messages[{i}]", message.get("role"), message.get("content")
        if role not in ("user", "assistant"):
            raise _bad(f"{where}.role", "expected 'user' or 'assistant' (the system prompt is the top-level system)")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif isinstance(content, list):
            out.extend(_user_messages(content, f"{where}.content") if role == "user"
                       else [_assistant_message(content, f"{where}.content")])
        else:
            raise _bad(f"{where}.content", "expected a string or a list of content blocks")
    return out


def _tool(tool: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(tool.get("name"), str):
        raise _bad(where, "a tool needs a name (and an input_schema)")
    function = {"name": tool["name"], "parameters": tool.get("input_schema") or {"type": "object"}}
    if tool.get("description"):
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


CHOICES: dict[str, Any] = {"auto": "auto", "any": "required", "none": "none"}


def _tool_choice(choice: dict[str, Any]) -> Any:
    kind = choice.get("type")
    if kind == "tool" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    if kind in CHOICES:
        return CHOICES[kind]
    raise _bad("tool_choice", "expected {type: auto | any | none} or {type: tool, name}")


def chat_body(body: dict[str, Any], req: MessagesRequest) -> dict[str, Any]:
    """The chat-completions body this Messages request means, routing fields kept for the gateway."""
    out: dict[str, Any] = {k: v for k, v in body.items() if k in ROUTING_FIELDS}
    out.update(model=req.model, messages=chat_messages(req), max_tokens=req.max_tokens)
    for name in ("temperature", "top_p"):
        if getattr(req, name) is not None:
            out[name] = getattr(req, name)
    if req.stop_sequences:
        out["stop"] = req.stop_sequences
    if req.metadata and isinstance(req.metadata.get("user_id"), str):
        out["user"] = req.metadata["user_id"]
    if req.tools:
        out["tools"] = [_tool(t, f"tools[{i}]") if isinstance(t, dict) else _tool({}, f"tools[{i}]")
                        for i, t in enumerate(req.tools)]
    if req.tool_choice is not None:
        out["tool_choice"] = _tool_choice(req.tool_choice)
        if req.tool_choice.get("disable_parallel_tool_use") and req.tools:
            out["parallel_tool_calls"] = False
    if req.stream:
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}  # message_delta carries the usage
    return out
