"""POST /v2/modelRouter/modelSelect: the hot path. Thin: the work is in api.selection.service."""

from __future__ import annotations

from litestar import post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter

from api.auth import SECURITY
from api.openapi_docs import error_responses
from api.schemas.model_select import ModelSelectRequest, ModelSelectResponse
from api.services import Services
from storage.records import User


@post("/v2/modelRouter/modelSelect", operation_id="modelSelect", tags=["routing"], status_code=200,
      summary="Select the best model for a query", security=SECURITY, sync_to_thread=False,
      responses=error_responses(404))
def model_select(
    data: JSONBody[ModelSelectRequest],
    user: NamedDependency[User],
    services: NamedDependency[Services],
    type: str | None = Parameter(default=None, description="'openrouter': accept and return provider/model ids"),
) -> ModelSelectResponse:
    return services.selection.select(data, user, type)
