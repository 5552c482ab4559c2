"""The chat-completions request as the gateway reads it. Only the fields the gateway acts on are typed; every other
field (temperature, max_tokens, tools, tool_choice, response_format, ...) goes to the provider as the caller sent
it, less the routing fields, which are switchboard's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

import msgspec

from api.errors import BadRequest
from api.schemas.common import CostQualityTradeoff, ModelDepth, QualifiedModel, readable
from api.schemas.model_select import Identifier, LLMProvider, ModelSelectRequest
from api.schemas.preferences import read_entry

ROUTING_NAME = "switchboard"
# Read by the gateway, never forwarded (the official client sends them through `extra_body`).
ROUTING_FIELDS = frozenset({"llm_providers", "cost_quality_tradeoff", "tradeoff", "hash_content", "previous_session",
                            "preference_id", "max_model_depth"})


class ChatRequest(msgspec.Struct):
    model: QualifiedModel  # echoed in headers and errors: printable (api/schemas/common.py)
    messages: Annotated[list[dict[str, Any]], msgspec.Meta(min_length=1)]
    stream: bool | None = None
    stream_options: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    # Routing: as in modelSelect; a candidate may also be written "provider/model".
    llm_providers: Annotated[list[Union[LLMProvider, QualifiedModel]],
                             msgspec.Meta(min_length=1, max_length=100)] | None = None
    cost_quality_tradeoff: CostQualityTradeoff | None = None
    tradeoff: Literal["cost", "latency"] | None = None
    hash_content: bool | None = None
    previous_session: Identifier | None = None
    max_model_depth: ModelDepth | None = None


@dataclass(frozen=True)
class Target:
    """What the request's `model` asks for: routing (with a preference or the caller's default), or one model."""

    routed: bool
    preference_id: str | None = None
    provider: str | None = None
    model: str | None = None


def parse(body: dict[str, Any]) -> ChatRequest:
    try:
        return msgspec.convert(body, ChatRequest)
    except msgspec.ValidationError as exc:
        raise BadRequest(readable(str(exc)).replace(" - at `$", " at `"), code="INVALID_REQUEST") from None


def provider_model(name: str) -> tuple[str, str] | None:
    """'provider/model' split at its first '/' (the model may hold more), or None when either part is missing."""
    provider, sep, model = name.partition("/")
    return (provider, model) if sep and provider and model else None


def target(model: str) -> Target:
    if model == ROUTING_NAME:
        return Target(routed=True)
    parts = provider_model(model)
    if parts is not None and parts[0] == ROUTING_NAME:
        return Target(routed=True, preference_id=parts[1])
    if parts is not None:
        return Target(routed=False, provider=parts[0], model=parts[1])
    raise BadRequest(f"model {model!r}: use {ROUTING_NAME!r} (route with your defaults), "
                     f"'{ROUTING_NAME}/<preference_id>' (route with a preference) or 'provider/model' (call that "
                     "model, no routing)", code="INVALID_MODEL")


def candidates(req: ChatRequest, stored: list[str] | None = None) -> list[LLMProvider]:
    """The request's candidates, else those its preference stores."""
    out = []
    for entry in req.llm_providers or [read_entry(e) for e in stored or ()]:
        if isinstance(entry, str):
            parts = provider_model(entry)
            if parts is None:
                raise BadRequest(f"llm_providers: {entry!r} is not in provider/model form", code="INVALID_PROVIDER")
            entry = LLMProvider(provider=parts[0], model=parts[1])
        out.append(entry)
    return out


def selection_request(req: ChatRequest, goal: Target, stored: list[str] | None = None) -> ModelSelectRequest:
    providers = candidates(req, stored)
    if not providers:
        raise BadRequest("routing needs candidates: send llm_providers (with the openai client, in extra_body), "
                         "e.g. [\"openai/gpt-4o\", \"openai/gpt-4o-mini\"], or store them on the preference "
                         "(llm_providers of /v2/preferences/userPreferenceUpdate) or train it a custom router",
                         code="NO_CANDIDATES")
    return ModelSelectRequest(messages=req.messages, llm_providers=providers, tools=req.tools,
                              hash_content=req.hash_content, max_model_depth=req.max_model_depth,
                              tradeoff=req.tradeoff, cost_quality_tradeoff=req.cost_quality_tradeoff,
                              preference_id=goal.preference_id, previous_session=req.previous_session)


def forwarded(body: dict[str, Any], model: str, stream: bool) -> bytes:
    """The body the provider gets: the caller's, less routing fields, naming the provider's model. A stream always
    asks for usage (what the call cost is counted from); the caller sees the usage chunk only if it asked."""
    out = {k: v for k, v in body.items() if k not in ROUTING_FIELDS}
    out["model"] = model
    if stream:
        out["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    return msgspec.json.encode(out)


def answer_body(content: bytes, model: str) -> tuple[bytes, dict[str, Any]] | None:
    """The provider's answer naming `model` (the catalogue's provider/model) as the one that answered, with the
    answer as read; None when it is not a chat completion. (Decoding and encoding it whole takes about 3 us for
    a 1.4 kB answer: measured faster than splicing the name into the provider's bytes.)"""
    try:
        data = msgspec.json.decode(content)
    except msgspec.DecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        return None
    data["model"] = model
    return msgspec.json.encode(data), data
