"""POST /v2/pzn/trainCustomRouter: upload evaluation results, get a preference_id; training runs as a flow."""

from __future__ import annotations

from typing import Annotated

from litestar import post
from litestar.di import NamedDependency
from litestar.enums import RequestEncodingType
from litestar.params import Body

from api.auth import SECURITY
from api.custom_router.submission import RouterTrainingService
from api.dependencies import component
from api.openapi_docs import error_responses
from api.schemas.router_training import TrainCustomRouterForm, TrainCustomRouterResponse
from storage.records import User


@post("/v2/pzn/trainCustomRouter", operation_id="trainCustomRouter", tags=["custom routers"], status_code=200,
      summary="Train a custom router on your evaluation results", security=SECURITY,
      responses=error_responses(404, 408, 409, 413, 503),
      dependencies={"router_training": component("router_training")})
async def train_custom_router(
    data: Annotated[TrainCustomRouterForm, Body(media_type=RequestEncodingType.MULTI_PART)],
    user: NamedDependency[User],
    router_training: NamedDependency[RouterTrainingService],
) -> TrainCustomRouterResponse:
    return TrainCustomRouterResponse(preference_id=await router_training.submit(data, user))
