"""GET /v2/models: the catalogue of text-generation chat models, built offline from LiteLLM's price map. With an
API key it also lists the caller's organization's onboarded models and every published one (docs/api.md, "Model
figures and onboarding"); that answer is private to the caller, the plain catalogue is cached publicly."""

from __future__ import annotations

from litestar import Request, Response, get
from litestar.params import Parameter

from api.auth import current_user
from api.catalogue import UnknownProviderError, load_catalogue
from api.errors import BadRequest, Unauthorized
from api.openapi_docs import error_responses
from api.schemas.models import ModelListResponse, ModelResponse, to_model_response, to_onboarding_response

PUBLIC_CACHE = "public, max-age=3600"


@get("/v2/models", operation_id="listModels", tags=["models"], summary="List supported models",
     responses=error_responses(secured=False))
async def list_models(
    request: Request,
    provider: list[str] | None = Parameter(default=None, description="Filter by provider; repeat to give several"),
    aggregator_only: bool = Parameter(default=False, description="Only models served by the aggregator"),
    openrouter_only: bool = Parameter(default=False, description="Alias of aggregator_only (official client)"),
) -> Response[ModelListResponse]:
    try:
        active, deprecated = load_catalogue().list(provider or None, aggregator_only or openrouter_only)
    except UnknownProviderError as exc:
        raise BadRequest(str(exc), code="UNKNOWN_PROVIDER", details={"unknown": sorted(exc.names)}) from exc
    models: list[ModelResponse] = [to_model_response(m) for m in active]
    listed = ModelListResponse(models=models, total=len(models),
                               deprecated_models=[to_model_response(m) for m in deprecated])
    if "authorization" not in request.headers:
        return Response(listed, headers={"Cache-Control": PUBLIC_CACHE})
    try:
        user = await current_user(request)
    except Unauthorized:  # the catalogue needs no key: a bad one gets the public answer, as with none
        return Response(listed, headers={"Cache-Control": PUBLIC_CACHE})
    runs = request.app.state.services.figures.runs_for(user.organization_id)
    listed.onboarded = [to_onboarding_response(r) for r in _latest(runs)]
    return Response(listed, headers={"Cache-Control": "private, no-store"})


def _latest(runs) -> list:
    """One run per model: the newest (a failed run stays on record beside the run that retried it)."""
    newest = {}
    for run in runs:
        key = (run.organization_id, run.provider, run.model)
        if key not in newest or run.created_at >= newest[key].created_at:
            newest[key] = run
    return list(newest.values())
