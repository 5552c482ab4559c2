"""Owner-only endpoints: liveness, and the storage RPC used by the flow runner and the CLI.

Not part of the public API (excluded from the OpenAPI document) and guarded by the owner token.
"""

from __future__ import annotations

import hmac

import msgspec
from litestar.di import NamedDependency
from litestar.params import FromPath
from litestar import Request, Response, get, post

from api.errors import BadRequest, NotFound, Unauthorized
from api.services import Services
from storage import rpc
from storage.store import StoreError


@get("/internal/health", include_in_schema=False, sync_to_thread=False)
def health() -> dict[str, str]:
    return {"status": "ok"}


@post("/internal/rpc/{method:str}", include_in_schema=False, status_code=200)
async def storage_rpc(method: FromPath[str], request: Request, services: NamedDependency[Services]) -> Response:
    supplied = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(supplied.encode(), services.rpc_token.encode()):
        raise Unauthorized("internal endpoint: owner token required")
    body = await request.body()
    try:
        result = rpc.dispatch(services.store, method, body)
    except KeyError:
        raise NotFound(f"no storage method {method!r}") from None
    except (msgspec.ValidationError, msgspec.DecodeError, StoreError) as exc:
        raise BadRequest(str(exc)) from exc
    if method == "revoke_key":
        services.auth_cache.clear()  # revocation takes effect at once in the owner
    return Response(content=result, media_type="application/json")
