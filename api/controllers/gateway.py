"""The OpenAI-compatible gateway: POST /v1/chat/completions and GET /v1/models. Thin: the work is in
api/gateway/service.py; errors on /v1 take OpenAI's error shape (api/error_responses.py)."""

from __future__ import annotations

from typing import Any

from litestar import MediaType, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import Stream

from api.auth import SECURITY
from api.dependencies import after_auth
from api.gateway.service import Answer, GatewayService
from api.openapi_docs import error_responses
from storage.records import User


@post("/v1/chat/completions", operation_id="chatCompletions", tags=["gateway"], status_code=200,
      summary="Route, call and record a chat completion (OpenAI wire format)", security=SECURITY,
      responses=error_responses(404), dependencies={"gateway": after_auth("gateway")})
async def chat_completions(data: JSONBody[dict[str, Any]], user: NamedDependency[User],
                           gateway: NamedDependency[GatewayService], request: Request) -> Response | Stream:
    result = await gateway.complete(data, len(await request.body()), user)
    if isinstance(result, Answer):
        return Response(content=result.body, media_type=MediaType.JSON, headers=result.headers)
    return Stream(result.events, media_type="text/event-stream", headers={**result.headers, "cache-control": "no-cache"})


@get("/v1/models", operation_id="listRoutingModels", tags=["gateway"], summary="Routing names this key may use",
     security=SECURITY, sync_to_thread=True, responses=error_responses(),
     dependencies={"gateway": after_auth("gateway")})
def list_routing_models(user: NamedDependency[User], gateway: NamedDependency[GatewayService]) -> Response:
    return Response(content=gateway.model_list(user), media_type=MediaType.JSON)
