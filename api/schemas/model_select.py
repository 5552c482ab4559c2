from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

from api.schemas.common import (ContextLength, CostQualityTradeoff, LatencySeconds, ModelDepth, ModelId,
                                PricePerMillion, ProviderName)

Identifier = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]


class LLMProvider(msgspec.Struct):
    """A candidate: a provider reference {provider, model}, or an aggregator-format entry {model: "vendor/model"}
    (with `?type=openrouter`). Custom models (absent from the catalogue) set is_custom and describe themselves."""

    model: ModelId
    provider: ProviderName | None = None
    is_custom: bool = False
    context_length: ContextLength | None = None
    input_price: PricePerMillion | None = None
    output_price: PricePerMillion | None = None
    latency: LatencySeconds | None = None


ToolName = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}\Z")]


class FunctionDefinition(msgspec.Struct):
    name: ToolName
    description: str | None = None
    parameters: dict[str, Any] | None = None  # a JSON Schema object
    strict: bool | None = None


class FunctionTool(msgspec.Struct, tag_field="type", tag="function"):
    """`{"type": "function", "function": {"name": ..., "description": ..., "parameters": {...}}}`"""

    function: FunctionDefinition


class CustomToolDefinition(msgspec.Struct):
    name: ToolName
    description: str | None = None
    format: dict[str, Any] | None = None


class CustomTool(msgspec.Struct, tag_field="type", tag="custom"):
    """`{"type": "custom", "custom": {"name": ..., "description": ..., "format": {...}}}`"""

    custom: CustomToolDefinition


# The chat API's tool format, which the interface names for `tools`. The request keeps `tools` as plain objects
# (they are stored and counted as sent); api/selection/service.py checks them against this with a 400.
ToolDefinition = Union[FunctionTool, CustomTool]


class Message(msgspec.Struct):
    role: Annotated[str, msgspec.Meta(max_length=64)] = "user"
    content: str | list[Any] | None = None


class ModelSelectRequest(msgspec.Struct):
    messages: Union[list[dict[str, Any]], str]
    llm_providers: Annotated[list[LLMProvider], msgspec.Meta(min_length=1, max_length=100)]
    tools: list[dict[str, Any]] | None = None
    hash_content: bool | None = None
    metric: str = "accuracy"
    max_model_depth: ModelDepth | None = None
    tradeoff: Literal["cost", "latency"] | None = None
    cost_quality_tradeoff: CostQualityTradeoff | None = None
    preference_id: Identifier | None = None
    previous_session: Identifier | None = None


class SelectedProvider(msgspec.Struct):
    provider: str
    model: str


class ModelSelectResponse(msgspec.Struct):
    providers: list[SelectedProvider]
    session_id: str


class ProviderRef(msgspec.Struct):
    provider: ProviderName
    model: ModelId


class FeedbackValues(msgspec.Struct):
    accuracy: Literal[0, 1]


class FeedbackReport(msgspec.Struct):
    session_id: Identifier
    provider: ProviderRef
    feedback: FeedbackValues


class FeedbackResponse(msgspec.Struct):
    session_id: str
    feedback_id: str
    accepted: bool
