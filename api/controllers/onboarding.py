"""Onboarding a model without figures (docs/api.md, "Model figures and onboarding"): start a run, read it back, and
an admin's publish. The work is in api/model_figures/onboarding.py and the onboard-model flow."""

from __future__ import annotations

from litestar import get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from api.auth import SECURITY
from api.dependencies import after_auth
from api.model_figures.onboarding import OnboardingService
from api.openapi_docs import error_responses
from api.schemas.models import OnboardingResponse, OnboardRequest, PublishRequest, to_onboarding_response
from storage.records import User

ONBOARDING = {"onboarding": after_auth("onboarding")}


@post("/v2/models/onboard", operation_id="onboardModel", tags=["models"], status_code=202, security=SECURITY,
      summary="Measure a model the router has no figures for", responses=error_responses(503),
      dependencies=ONBOARDING)
async def onboard_model(data: JSONBody[OnboardRequest], user: NamedDependency[User],
                        onboarding: NamedDependency[OnboardingService]) -> OnboardingResponse:
    run, created = await onboarding.start(user, data.provider, data.model, data.input_price, data.output_price)
    return to_onboarding_response(run, created)


@get("/v2/models/onboard/{run_id:str}", operation_id="onboardingStatus", tags=["models"], security=SECURITY,
     summary="An onboarding run and its measured figures", responses=error_responses(404), dependencies=ONBOARDING)
async def onboarding_status(run_id: FromPath[str], user: NamedDependency[User],
                            onboarding: NamedDependency[OnboardingService]) -> OnboardingResponse:
    return to_onboarding_response(await onboarding.get(user, run_id))


@post("/v2/models/onboard/{run_id:str}/publish", operation_id="publishOnboarding", tags=["models"], status_code=200,
      security=SECURITY, summary="Admin: serve an onboarded model's figures to every organization",
      responses=error_responses(403, 404), dependencies=ONBOARDING)
async def publish_onboarding(run_id: FromPath[str], data: JSONBody[PublishRequest], user: NamedDependency[User],
                             onboarding: NamedDependency[OnboardingService]) -> OnboardingResponse:
    return to_onboarding_response(await onboarding.publish(user, run_id, data.published))


ONBOARDING_ROUTES = [onboard_model, onboarding_status, publish_onboarding]
