"""GET /metrics: the Prometheus text format (api/observability/metrics.py), every API worker's values added up.
No API key: a scraper has none. SWITCHBOARD_METRICS_TOKEN, when set, is the bearer token it must send instead
(docs/operations.md); SWITCHBOARD_METRICS=0 removes the route."""

from __future__ import annotations

import hmac

from litestar import Request, Response, get

from api.errors import Unauthorized
from api.observability.metrics import exposition


@get("/metrics", include_in_schema=False, sync_to_thread=True)
def metrics(request: Request) -> Response:
    token = request.app.state.services.settings.metrics_token
    if token is not None:
        sent = request.headers.get("authorization", "")
        if not hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
            raise Unauthorized("GET /metrics needs `Authorization: Bearer <SWITCHBOARD_METRICS_TOKEN>`")
    body, content_type = exposition()
    return Response(content=body, media_type=content_type)
