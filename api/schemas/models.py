from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from api.schemas.common import ModelId, PricePerMillion, ProviderName

if TYPE_CHECKING:
    from api.catalogue import CatalogueModel
    from storage.model_figure_records import OnboardingRun


class ModelResponse(msgspec.Struct):
    provider: str
    model: str
    context_length: int
    input_price: float = msgspec.field()
    output_price: float = msgspec.field()
    aggregator_model: str | None = None
    openrouter_model: str | None = None  # the same value under the name the official client reads


class MeasuredFigureResponse(msgspec.Struct):
    """One benchmark of the calibration suite: questions asked, answered right, the accuracy (percent) and its 95 %
    Wilson interval."""

    benchmark: str
    kind: str
    asked: int
    correct: int
    score: float
    low: float
    high: float


class OnboardingResponse(msgspec.Struct):
    run_id: str
    provider: str
    model: str
    status: str  # queued | processing | completed | failed
    calls: int
    cost_usd: float
    published: bool
    figures: list[MeasuredFigureResponse]
    error: str | None = None
    created: bool | None = None  # on POST /v2/models/onboard: False when the organization already had this run


class ModelListResponse(msgspec.Struct, omit_defaults=True):
    models: list[ModelResponse]
    total: int
    deprecated_models: list[ModelResponse]
    # Only with an API key: the caller's organization's onboarded models and every published one (docs/api.md).
    onboarded: list[OnboardingResponse] | None = None




class OnboardRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A model to measure: a catalogue model, or a custom one with its prices (the spend cap needs them)."""

    provider: ProviderName
    model: ModelId
    input_price: PricePerMillion | None = None
    output_price: PricePerMillion | None = None


class PublishRequest(msgspec.Struct, forbid_unknown_fields=True):
    published: bool = True


def to_model_response(m: "CatalogueModel") -> ModelResponse:
    return ModelResponse(provider=m.provider, model=m.model, context_length=m.context_length,
                         input_price=m.input_price, output_price=m.output_price,
                         aggregator_model=m.aggregator_model, openrouter_model=m.aggregator_model)


def to_onboarding_response(run: "OnboardingRun", created: bool | None = None) -> OnboardingResponse:
    # lazy: keeps this schema module free of the routing code the measured figures' rows come with
    from api.model_figures.measured import decode

    return OnboardingResponse(run_id=run.run_id, provider=run.provider, model=run.model, status=run.status,
                              calls=run.calls, cost_usd=run.cost_usd, published=run.published,
                              figures=[MeasuredFigureResponse(**msgspec.structs.asdict(f)) for f in decode(run.figures)],
                              error=run.error, created=created)
