"""The Litestar application factory: routes, the error envelope, and the lifespan that builds the components."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import AsyncIterator

from litestar import Litestar
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components

from api.auth import SECURITY_SCHEMES, current_user
from api.body_guard import BodyReadGuard
from api.controllers.admin import AdminController
from api.controllers.feedback import report_feedback
from api.controllers.gateway import chat_completions, list_routing_models
from api.controllers.messages import create_message
from api.openapi_viewer import render_plugins, viewer_asset
from api.controllers.health import health, ready
from api.controllers.internal import OWNER_ROUTES
from api.controllers.metrics import metrics
from api.controllers.model_select import model_select
from api.controllers.models import list_models
from api.controllers.onboarding import ONBOARDING_ROUTES
from api.controllers.preferences import PreferenceController
from api.controllers.prompts import PromptOptimizationController
from api.controllers.router_training import train_custom_router
from api.controllers.usage import UsageController
from api.dependencies import component
from api.error_responses import EXCEPTION_HANDLERS
from api.errors import NotFound
from api.logging_setup import logging_config
from api.observability import hooks
from api.observability.middleware import TelemetryMiddleware
from api.request_body import SafeJsonRequest
from api.request_id import RequestIdMiddleware
from api.settings import Settings, get_settings
from api.startup import build_services, single_threaded_blas, tune_garbage_collector
from storage import owner
from storage.owner_endpoint import OwnerEndpoint
from storage.store import LocalStore

log = logging.getLogger("switchboard.api")


def create_app(settings: Settings | None = None, *, publish_owner: bool = True) -> Litestar:
    settings = settings or get_settings()
    owner_box: dict[str, OwnerEndpoint] = {}
    tracing = None
    if settings.tracing:
        # lazy: OpenTelemetry loads only where OTEL_* variables ask for traces (api/observability/tracing.py)
        from api.observability.tracing import Tracing

        tracing = Tracing()
    hooks.configure(settings.metrics_enabled, tracing)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        # Behind a live store owner (`switchboard store`: several API workers, flows on work pools) this process
        # is a client; otherwise it opens the DuckDB file itself and serves the owner routes (a single worker).
        # An owner file whose owner does not answer may be a store owner restarting: waiting a little keeps this
        # process from opening the file and locking it out (a crashed single-process owner costs 10 s more).
        # With SWITCHBOARD_DATABASE_URL every worker connects to PostgreSQL itself and no process owns anything.
        store = owner.open_store(settings.db_path, settings.run_dir, wait_for_owner_s=10.0,
                                 database_url=settings.database_url)
        if settings.metrics_enabled:
            hooks.observe_store(store)
        owns_store = store.owns_file
        services = build_services(settings, store)
        app.state.services = services  # controllers take their components from here (api/dependencies.py)
        if isinstance(store, LocalStore):
            owner_box["owner"] = OwnerEndpoint(store, services.rpc_token)
        tune_garbage_collector()
        single_threaded_blas()
        publishing = owns_store and publish_owner
        if publishing:
            owner.publish(settings.run_dir, owner.reachable_url(settings.host, settings.port), services.rpc_token)
        log.info("switchboard API ready; data dir %s; %s", settings.data_dir,
                 "owns the store" if owns_store else "store owner at its published URL")
        try:
            yield
        finally:
            if publishing:
                owner.withdraw(settings.run_dir)
            await services.gateway.aclose()
            services.gateway.close()
            services.budget.drain()  # settle the calls that ended before the process does
            services.sessions.close()  # flush buffered sessions and feedback before the process ends
            store.close()
            if tracing is not None:
                tracing.shutdown()

    def provide_owner() -> OwnerEndpoint:
        if "owner" not in owner_box:
            raise NotFound("this API process does not own the store; the store owner serves /internal")
        return owner_box["owner"]

    # The upload route alone accepts bodies up to the dataset limit plus room for the other form fields; the file's
    # own size is checked exactly (413 naming the limit) by the training service.
    train_custom_router.request_max_body_size = settings.upload_max_bytes + 256 * 1024
    app = Litestar(
        route_handlers=[ready, health, *([metrics] if settings.metrics_enabled else []), list_models,
                        PreferenceController, model_select, report_feedback, *OWNER_ROUTES,
                        train_custom_router, PromptOptimizationController, chat_completions, create_message,
                        list_routing_models,
                        *ONBOARDING_ROUTES, AdminController, UsageController, viewer_asset],
        lifespan=[lifespan],
        dependencies={"owner": Provide(provide_owner, sync_to_thread=False),
                      "readiness": component("readiness"),
                      "user": Provide(current_user if tracing is None else hooks.traced_auth(current_user))},
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        request_max_body_size=settings.max_body_bytes,
        request_class=SafeJsonRequest,  # undecodable JSON (too deep, not UTF-8) is a 422, not a 500
        logging_config=logging_config(settings.log_level, settings.log_format),
        openapi_config=OpenAPIConfig(
            title="switchboard", version="0.1.0",
            description="LLM routing and prompt optimization (Not Diamond-compatible /v2 interface)",
            path="/schema", components=Components(security_schemes=SECURITY_SCHEMES),
            render_plugins=render_plugins()),  # the viewer's assets are served here: /schema works offline
        debug=False,
    )
    # Wrap the whole handler chain, not one route: 404s and 405s also need their request id, and every body read
    # is bounded in time (api/body_guard.py).
    guarded = BodyReadGuard(app.asgi_handler, idle_timeout_s=settings.http_body_idle_timeout_s,
                            total_timeout_s=settings.http_body_timeout_s)
    # Telemetry inside the request id (its access line and span carry it), around everything else.
    observed = TelemetryMiddleware(guarded, metrics=settings.metrics_enabled, tracing=tracing)
    app.asgi_handler = RequestIdMiddleware(observed)
    return app
