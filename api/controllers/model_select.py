"""POST /v2/modelRouter/modelSelect: the hot path. Thin: the work is in api.selection.service."""

from __future__ import annotations

import anyio
from litestar import Request, Response, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter

from api.auth import SECURITY
from api.dependencies import after_auth
from api.gateway.headers import named_header
from api.openapi_docs import error_responses
from api.schemas.model_select import ModelSelectRequest, ModelSelectResponse
from api.selection.service import SelectionService
from storage.records import User

# Names the candidates the default router has no figures for (docs/api.md, "Model figures and onboarding").
NO_EVIDENCE_HEADER = "x-switchboard-no-evidence"


@post("/v2/modelRouter/modelSelect", operation_id="modelSelect", tags=["routing"], status_code=200,
      summary="Select the best model for a query", security=SECURITY, responses=error_responses(404),
      dependencies={"selection": after_auth("selection")})
async def model_select(
    data: JSONBody[ModelSelectRequest],
    user: NamedDependency[User],
    selection: NamedDependency[SelectionService],
    request: Request,
    type: str | None = Parameter(default=None, description="'openrouter': accept and return provider/model ids"),
) -> ModelSelectResponse | Response[ModelSelectResponse]:
    # A store call, a huge prompt or body: keep the event loop free for everyone else (the body is already read).
    if selection.may_block(data, len(await request.body())):
        decided = await anyio.to_thread.run_sync(selection.decide, data, user, type)
    else:
        decided = selection.decide(data, user, type)  # the default path (~0.3 ms) is cheaper than a thread hop
    if not decided.no_evidence:
        return decided.response
    # Candidates placed by the prior for the unknown: say so, and measure the reachable ones (onboarding).
    request.app.state.services.onboarding.auto(user, [(c.candidate.provider, c.candidate.model, c.candidate.input_price,
                                                       c.candidate.output_price) for c in decided.ranked
                                                      if c.candidate.key in decided.no_evidence])
    return Response(decided.response, headers=named_header(NO_EVIDENCE_HEADER, ",".join(decided.no_evidence)))
