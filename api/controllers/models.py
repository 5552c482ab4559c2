"""GET /v2/models: the catalogue of text-generation chat models, built offline from LiteLLM's price map."""

from __future__ import annotations

from litestar import get
from litestar.datastructures import CacheControlHeader
from litestar.params import Parameter

from api.catalogue import UnknownProviderError, load_catalogue
from api.errors import BadRequest
from api.openapi_docs import error_responses
from api.schemas.models import ModelListResponse, ModelResponse, to_model_response


@get("/v2/models", operation_id="listModels", tags=["models"], summary="List supported models",
     cache_control=CacheControlHeader(max_age=3600, public=True), sync_to_thread=False,
     responses=error_responses(secured=False))
def list_models(
    provider: list[str] | None = Parameter(default=None, description="Filter by provider; repeat to give several"),
    aggregator_only: bool = Parameter(default=False, description="Only models served by the aggregator"),
    openrouter_only: bool = Parameter(default=False, description="Alias of aggregator_only (official client)"),
) -> ModelListResponse:
    try:
        active, deprecated = load_catalogue().list(provider or None, aggregator_only or openrouter_only)
    except UnknownProviderError as exc:
        raise BadRequest(str(exc), code="UNKNOWN_PROVIDER", details={"unknown": sorted(exc.names)}) from exc
    models: list[ModelResponse] = [to_model_response(m) for m in active]
    return ModelListResponse(models=models, total=len(models),
                             deprecated_models=[to_model_response(m) for m in deprecated])
