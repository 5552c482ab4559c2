"""GET /ready: whether this API process can serve everything (api/readiness.py), and GET /health: whether it is
alive (docs/operations.md, Kubernetes probes). Not part of the /v2 interface,
so it is left out of the OpenAPI document; no key is needed, and it reveals only which part is starting."""

from __future__ import annotations

from litestar import Response, get
from litestar.di import NamedDependency

from api.readiness import Readiness


@get("/ready", include_in_schema=False)
async def ready(readiness: NamedDependency[Readiness]) -> Response:
    checks = await readiness.checks()
    is_ready = all(value == "ok" for value in checks.values())
    return Response({"status": "ready" if is_ready else "starting", "checks": checks},
                    status_code=200 if is_ready else 503, headers=None if is_ready else {"Retry-After": "2"})


@get("/health", include_in_schema=False)
async def health() -> Response:
    """Liveness: this process answers HTTP (a Kubernetes livenessProbe). It checks nothing else on purpose: a store
    that is restarting makes /ready fail and takes the pod out of service, but is no reason to restart the pod."""
    return Response({"status": "ok"}, status_code=200)
