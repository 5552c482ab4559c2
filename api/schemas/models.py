from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from api.catalogue import CatalogueModel


class ModelResponse(msgspec.Struct):
    provider: str
    model: str
    context_length: int
    input_price: float = msgspec.field()
    output_price: float = msgspec.field()
    aggregator_model: str | None = None
    openrouter_model: str | None = None  # the same value under the name the official client reads


class ModelListResponse(msgspec.Struct):
    models: list[ModelResponse]
    total: int
    deprecated_models: list[ModelResponse]


def to_model_response(m: "CatalogueModel") -> ModelResponse:
    return ModelResponse(provider=m.provider, model=m.model, context_length=m.context_length,
                         input_price=m.input_price, output_price=m.output_price,
                         aggregator_model=m.aggregator_model, openrouter_model=m.aggregator_model)
