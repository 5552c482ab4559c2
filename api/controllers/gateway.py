"""The OpenAI-compatible gateway: POST /v1/chat/completions and GET /v1/models. Thin: the work is in
api/gateway/service.py; errors on /v1 take OpenAI's error shape (api/error_responses.py).

The lean path (docs/architecture.md, "The lean path of a hot endpoint"), as modelSelect's: the route's
`before_request` hook decodes the body with msgspec, authenticates through the app's own `user` provider and calls
the gateway, without Litestar's per-request kwargs extraction, dependency resolution or signature model. A body that
is not a JSON object is handed back to the declared handler (the hook answers None), which reports it with the
errors and order of checks it always had; the handler's signature is also what the OpenAPI schema documents.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
from litestar import MediaType, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import JSONBody
from litestar.response import Stream
from litestar.response.streaming import ASGIStreamingResponse
from litestar.types import Receive, Scope, Send

from api.auth import SECURITY
from api.controllers.lean import caller, decoded
from api.dependencies import after_auth
from api.gateway.service import Answer, CallerLeft, GatewayService
from api.openapi_docs import error_responses
from storage.records import User


_OBJECT = msgspec.json.Decoder(dict[str, Any])
GatewayCall = Callable[[Request, GatewayService, dict[str, Any], int, User], Awaitable[Response | Stream]]


def lean_path(answer: GatewayCall) -> Callable[[Request], Awaitable[Response | Stream | None]]:
    """A gateway route's `before_request` hook: the body decoded, the caller authenticated and `answer` called
    without the dependency machinery; None (the declared handler answers) when the body is not a JSON object."""

    async def lean(request: Request) -> Response | Stream | None:
        body = await decoded(request, _OBJECT)
        if body is None:
            return None  # the declared path reports it, in its order (the body, then the key)
        data, size = body
        return await answer(request, request.app.state.services.gateway, data, size, await caller(request))

    return lean


async def complete(request: Request, gateway: GatewayService, data: dict[str, Any], size: int,
                   user: User) -> Response | Stream:
    return respond(await until_the_caller_leaves(request.receive, gateway.complete(data, size, user)))


@post("/v1/chat/completions", operation_id="chatCompletions", tags=["gateway"], status_code=200,
      summary="Route, call and record a chat completion (OpenAI wire format)", security=SECURITY,
      responses=error_responses(404), dependencies={"gateway": after_auth("gateway")},
      before_request=lean_path(complete))
async def chat_completions(data: JSONBody[dict[str, Any]], user: NamedDependency[User],
                           gateway: NamedDependency[GatewayService], request: Request) -> Response | Stream:
    # Reached when the lean path hands a request back; Litestar has decoded it, or answered its error.
    return await complete(request, gateway, data, len(await request.body()), user)


def respond(result: Any, whole: Callable[[Any], Any] = lambda body: body,
            events: Callable[[Any], Any] = lambda stream: stream) -> Response | Stream:
    """The HTTP answer to a gateway call (an Answer or a stream), its body or events written in the route's format by
    `whole` / `events` (/v1/messages translates them to Anthropic's; /v1/chat/completions relays them)."""
    if isinstance(result, Answer):
        return AnswerResponse(result.after, content=whole(result.body), media_type=MediaType.JSON,
                              headers=result.headers)
    return EventStream(events(result.events), media_type="text/event-stream",
                       headers={**result.headers, "cache-control": "no-cache"})


T = TypeVar("T")


class CallerWatch:
    """Cancels the current task when the caller disconnects (the body has been read, so the next ASGI message is the
    disconnect); `left` says whether that is why it was cancelled. One plain task: an anyio task group's set-up and
    cancel were measured at a fifth of a streamed request's CPU here."""

    def __init__(self, receive: Receive) -> None:
        self.left, task = False, asyncio.current_task()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            self.left = True
            task.cancel()  # type: ignore[union-attr]

        self._watcher = asyncio.ensure_future(watch())

    def ours(self) -> bool:
        """After a CancelledError: True (and the cancel taken back) when the caller's leaving caused it."""
        if self.left:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        return self.left

    def stop(self) -> None:
        self._watcher.cancel()


async def until_the_caller_leaves(receive: Receive, work: Awaitable[T]) -> T:
    """`work`, cancelled (CallerLeft) if the caller disconnects first: nobody would read the answer, so the upstream
    call stops there, rather than holding a pooled connection until the provider finishes (issue 31)."""
    watch = CallerWatch(receive)
    try:
        return await work
    except asyncio.CancelledError:
        if not watch.ours():
            raise
        raise CallerLeft("the caller disconnected before the answer; the upstream call was cancelled") from None
    finally:
        watch.stop()


class AnswerResponse(Response):
    """An answer whose record is written once it is sent, so the caller does not wait for it, and also when the
    sending fails (a caller that left still had a call made and paid for). On the event loop: a thread hop would
    cost more than the work."""

    def __init__(self, after: Callable[[], None] | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.after = after

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        sent, after = super().to_asgi_response(*args, **kwargs), self.after

        async def respond(scope: Scope, receive: Receive, send: Send) -> None:
            try:
                await sent(scope, receive, send)
            finally:
                if after is not None:
                    after()

        return respond


class _EventStreamASGI(ASGIStreamingResponse):
    """Litestar's streaming response, watching for the caller's disconnect with one plain asyncio task instead of an
    anyio task group (measured: the group's set-up and cancel were a fifth of a streamed request's CPU here). A
    caller that leaves cancels the relay at once, which closes the provider's stream (api/gateway/relay.py)."""

    __slots__ = ()

    async def send_body(self, send: Send, receive: Receive) -> None:
        watch = CallerWatch(receive)
        try:
            await self._stream(send)
        except asyncio.CancelledError:
            if not watch.ours():  # the caller left: nothing to raise
                raise
        finally:
            watch.stop()


class EventStream(Stream):
    def to_asgi_response(self, *args: Any, **kwargs: Any) -> Any:
        response = super().to_asgi_response(*args, **kwargs)
        response.__class__ = _EventStreamASGI
        return response


@get("/v1/models", operation_id="listRoutingModels", tags=["gateway"], summary="Routing names this key may use",
     security=SECURITY, sync_to_thread=True, responses=error_responses(),
     dependencies={"gateway": after_auth("gateway")})
def list_routing_models(user: NamedDependency[User], gateway: NamedDependency[GatewayService]) -> Response:
    return Response(content=gateway.model_list(user), media_type=MediaType.JSON)
