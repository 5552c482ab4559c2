"""Owner-only endpoints: liveness, the storage RPC and the change feed, used by API workers, flow runs and the CLI.

Not part of the public API (excluded from the OpenAPI document) and guarded by the owner token. Served by
whichever process owns the DuckDB file (storage/owner_endpoint.py): the store-owner process, or an API process
that opened the file itself. An API worker that talks to a store owner answers 404 here.
"""

from __future__ import annotations

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from api.errors import BadRequest, NotFound, Unauthorized
from storage.errors import StoreError
from storage.owner_changes import CHANGES_HEADER, ChangeFeed
from storage.owner_endpoint import OwnerEndpoint


def _check_token(request: Request, owner: OwnerEndpoint) -> None:
    supplied = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if not owner.authorised(supplied):
        raise Unauthorized("internal endpoint: owner token required")


@get("/internal/health", include_in_schema=False, sync_to_thread=False)
def health() -> dict[str, str]:
    return {"status": "ok"}


@post("/internal/rpc/{method:str}", include_in_schema=False, status_code=200)
async def storage_rpc(method: FromPath[str], request: Request, owner: NamedDependency[OwnerEndpoint]) -> Response:
    _check_token(request, owner)
    body = await request.body()
    try:
        result, changed = owner.call(method, body)
    except KeyError:
        raise NotFound(f"no storage method {method!r}") from None
    except (msgspec.ValidationError, msgspec.DecodeError, StoreError) as exc:
        raise BadRequest(str(exc)) from exc
    headers = {CHANGES_HEADER: ",".join(changed)} if changed else None
    return Response(content=result, media_type="application/json", headers=headers)


@get("/internal/changes", include_in_schema=False, sync_to_thread=False)
def store_changes(request: Request, owner: NamedDependency[OwnerEndpoint],
                  since: int = Parameter(default=-1, description="the cursor of the last feed seen")) -> ChangeFeed:
    _check_token(request, owner)
    return owner.feed(since)


OWNER_ROUTES = [health, storage_rpc, store_changes]
