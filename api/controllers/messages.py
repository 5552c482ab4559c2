"""POST /v1/messages: Anthropic's Messages format on the gateway's one path (api/gateway/service.py), translated
to the chat-completions body the upstreams speak and back (api/gateway/messages.py, messages_answer.py). Errors
take Anthropic's shape (api/error_responses.py). The gateway's lean path (api/controllers/gateway.py, `lean_path`)
answers here too: a JSON object is translated and called without Litestar's per-request machinery."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import Stream

from api.auth import SECURITY
from api.controllers.gateway import lean_path, respond, until_the_caller_leaves
from api.dependencies import after_auth
from api.gateway import messages, messages_answer
from api.gateway.service import GatewayService
from api.openapi_docs import error_responses
from storage.records import User


async def message(request: Request, gateway: GatewayService, data: dict[str, Any], size: int,
                  user: User) -> Response | Stream:
    body = messages.chat_body(data, messages.parse(data))  # checked after the key, as on the declared path
    result = await until_the_caller_leaves(request.receive, gateway.complete(body, size, user))
    return respond(result, messages_answer.whole, messages_answer.translated)


@post("/v1/messages", operation_id="anthropicMessages", tags=["gateway"], status_code=200,
      summary="Route, call and record a message (Anthropic's Messages format)", security=SECURITY,
      responses=error_responses(404), dependencies={"gateway": after_auth("gateway")},
      before_request=lean_path(message))
async def create_message(data: JSONBody[dict[str, Any]], user: NamedDependency[User],
                         gateway: NamedDependency[GatewayService], request: Request) -> Response | Stream:
    # Reached when the lean path hands a request back; Litestar has decoded it, or answered its error.
    return await message(request, gateway, data, len(await request.body()), user)
