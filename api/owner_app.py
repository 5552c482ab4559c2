"""The store-owner process: the one process that opens the DuckDB file, serving only the owner routes (health, RPC,
change feed). `switchboard store` runs it under granian with one worker; `switchboard serve` and the production
shape start it before the API, so any number of API workers and flow runs share one system of record.

It refuses to start while another owner is live (two owners would mean two writers), publishes run/owner.json
once it serves, and on SIGTERM withdraws it and checkpoints DuckDB.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator

from litestar import Litestar
from litestar.di import Provide

from api.controllers.internal import OWNER_ROUTES
from api.error_responses import EXCEPTION_HANDLERS
from api.logging_setup import logging_config
from api.settings import get_settings
from storage import owner
from storage.errors import StoreError
from storage.owner_endpoint import OwnerEndpoint
from storage.store import LocalStore

log = logging.getLogger("switchboard.store")


def create_owner_app() -> Litestar:
    settings = get_settings()
    box: dict[str, OwnerEndpoint] = {}

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        other = owner.live_owner(settings.run_dir)
        if other is not None:
            raise StoreError(f"another process (pid {other.pid}, {other.url}) already owns {settings.db_path}")
        store = LocalStore(settings.db_path)  # migrates; refuses clearly if some process holds the file
        endpoint = OwnerEndpoint(store, owner.new_token())
        box["owner"] = endpoint
        url = settings.store_url or owner.reachable_url(settings.store_host, settings.store_port)
        owner.publish(settings.run_dir, url, endpoint.token)
        log.info("switchboard store owner ready; database %s", settings.db_path)
        try:
            yield
        finally:
            owner.withdraw(settings.run_dir)
            store.close()

    def provide_owner() -> OwnerEndpoint:
        return box["owner"]

    return Litestar(route_handlers=OWNER_ROUTES, lifespan=[lifespan],
                    dependencies={"owner": Provide(provide_owner, sync_to_thread=False)},
                    exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
                    openapi_config=None, debug=False,
                    logging_config=logging_config(settings.log_level, settings.log_format))
