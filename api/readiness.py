"""Readiness: whether this API process can serve everything, not only answer. Liveness is /internal/health.

Ready means: the system of record answers (this process owns it, or the store owner replies), and the Prefect
server answers with the deployments the API triggers registered, so an upload or an optimization queues at once.
`switchboard serve` starts the API only after that is true; a probe in front of several API workers uses GET /ready
(200, or 503 naming what is not ready). Results are cached for a second or two, so probes cannot load Prefect,
and refreshed by one check at a time: while it runs, other callers get the previous answer (the first callers,
with none yet, wait for that one check). Without this, every request arriving after the cache expired made its
own round of Prefect calls, and under 8 busy connections /ready's p99 was 357-541 ms.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import httpx

from api.launcher import ONBOARD_MODEL, OPTIMIZE_PROMPT, TRAIN_CUSTOM_ROUTER
from api.offload import off_loop
from api.settings import basic_auth
from storage.interfaces import Store

TRIGGERED_DEPLOYMENTS = (TRAIN_CUSTOM_ROUTER, OPTIMIZE_PROMPT, ONBOARD_MODEL)
CACHE_S = 2.0


@dataclass
class Readiness:
    store: Store
    prefect_api_url: str | None
    prefect_auth: str | None = None  # PREFECT_API_AUTH_STRING, "user:password"
    timeout_s: float = 2.0
    _last: tuple[float, dict[str, str]] = field(default=(0.0, {}), repr=False)
    _running: asyncio.Task | None = field(default=None, repr=False)  # the one check in flight

    async def checks(self) -> dict[str, str]:
        """Each part's state: 'ok', or what is wrong."""
        at, found = self._last
        if found and time.monotonic() - at < CACHE_S:
            return found
        if self._running is None:
            self._running = asyncio.ensure_future(self._check())
        elif found:  # a check is already under way: the previous answer is at most that check's time older
            return found
        # shield: a caller that goes away (client disconnect) does not cancel the check the others wait for
        return await asyncio.shield(self._running)

    async def _check(self) -> dict[str, str]:
        try:
            found = {"store": await self._store(), **await self._prefect()}
            self._last = (time.monotonic(), found)
            return found
        finally:
            self._running = None

    async def _store(self) -> str:
        if self.store.owns_file:
            return "ok"
        try:
            await off_loop(self.store.maintenance.ping)
        except Exception as exc:  # the owner (or PostgreSQL) is restarting or gone
            return f"the system of record (store owner or database) does not answer ({type(exc).__name__})"
        return "ok"

    async def _prefect(self) -> dict[str, str]:
        if not self.prefect_api_url:
            return {"prefect": "no Prefect server configured (PREFECT_API_URL): flows cannot be queued"}
        auth = basic_auth(self.prefect_auth)
        base = self.prefect_api_url.rstrip("/")
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, auth=auth) as client:
                if (await client.get(f"{base}/health")).status_code != 200:
                    return {"prefect": "the Prefect server is not healthy"}
                missing = [name for name in TRIGGERED_DEPLOYMENTS
                           if (await client.get(f"{base}/deployments/name/{name}")).status_code != 200]
        except httpx.HTTPError as exc:
            return {"prefect": f"the Prefect server does not answer ({type(exc).__name__})"}
        if missing:
            return {"prefect": "ok", "deployments": f"not registered yet: {', '.join(missing)} (the flow runner is "
                                                    "starting)"}
        return {"prefect": "ok", "deployments": "ok"}
