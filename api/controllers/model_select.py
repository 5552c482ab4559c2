"""POST /v2/modelRouter/modelSelect: the hot path. Thin: the work is in api.selection.service.

The lean path (docs/architecture.md, "The lean path of a hot endpoint"): the route's `before_request` hook, a
documented Litestar seam that runs inside the app's middleware and exception handlers and whose non-None answer
bypasses the handler, decodes the body with msgspec straight into ModelSelectRequest (strict, as
api/request_body.py checks it), authenticates from the cache through the app's own `user` provider and decides,
without Litestar's per-request kwargs extraction, dependency resolution or signature model (about a third of a
modelSelect's CPU). A body that does not decode cleanly is handed back to the declared handler below (the hook
answers None), so every malformed request gets exactly the errors, envelopes and order of checks it always had;
the handler's signature is also what the OpenAPI schema documents.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
from litestar import Request, Response, post
from litestar.di import NamedDependency
from litestar.params import JSONBody, Parameter

from api.auth import SECURITY
from api.controllers.lean import caller, decoded
from api.dependencies import after_auth
from api.gateway.headers import named_header
from api.openapi_docs import error_responses
from api.schemas.model_select import ModelSelectRequest, ModelSelectResponse
from api.selection.service import SelectionService
from storage.records import User

# Names the candidates the default router has no figures for (docs/api.md, "Model figures and onboarding").
NO_EVIDENCE_HEADER = "x-switchboard-no-evidence"
_DECODER = msgspec.json.Decoder(ModelSelectRequest, strict=True)


async def lean_model_select(request: Request) -> Any:
    """The whole request without the dependency machinery, or None to let the declared handler answer it."""
    body = await decoded(request, _DECODER)
    if body is None:
        return None  # a malformed body: the declared path reports it, in its order (json, key, schema)
    types = request.query_params.getall("type", ())
    if len(types) > 1 or types and not types[0]:
        return None  # a repeated or blank query parameter: the signature model decides, as before
    data, size = body
    return await answer(request, data, await caller(request), request.app.state.services.selection,
                        types[0] if types else None, size)


async def answer(request: Request, data: ModelSelectRequest, user: User, selection: SelectionService,
                 type_param: str | None, body_bytes: int) -> ModelSelectResponse | Response[ModelSelectResponse]:
    # A store call, a huge prompt or body: keep the event loop free for everyone else (the body is already read).
    if selection.may_block(data, body_bytes):
        decided = await anyio.to_thread.run_sync(selection.decide, data, user, type_param)
    else:
        decided = selection.decide(data, user, type_param)  # the default path (~0.3 ms) is cheaper than a thread hop
    if not decided.no_evidence:
        return decided.response
    # Candidates placed by the prior for the unknown: say so, and measure the reachable ones (onboarding).
    request.app.state.services.onboarding.auto(user, [(c.candidate.provider, c.candidate.model, c.candidate.input_price,
                                                       c.candidate.output_price) for c in decided.ranked
                                                      if c.candidate.key in decided.no_evidence])
    return Response(decided.response, headers=named_header(NO_EVIDENCE_HEADER, ",".join(decided.no_evidence)))


@post("/v2/modelRouter/modelSelect", operation_id="modelSelect", tags=["routing"], status_code=200,
      summary="Select the best model for a query", security=SECURITY, responses=error_responses(404),
      dependencies={"selection": after_auth("selection")}, before_request=lean_model_select)
async def model_select(
    data: JSONBody[ModelSelectRequest],
    user: NamedDependency[User],
    selection: NamedDependency[SelectionService],
    request: Request,
    type: str | None = Parameter(default=None, description="'openrouter': accept and return provider/model ids"),
) -> ModelSelectResponse | Response[ModelSelectResponse]:
    # Reached when lean_model_select hands a request back; Litestar has validated it, or answered its error.
    return await answer(request, data, user, selection, type, len(await request.body()))
