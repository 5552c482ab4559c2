"""The Litestar application factory. Heavy modules are imported lazily so start-up stays quick."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, AsyncIterator

from litestar import Litestar
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components

from api.auth import SECURITY_SCHEMES, current_user
from api.error_responses import EXCEPTION_HANDLERS
from api.request_body import SafeJsonRequest
from api.request_id import RequestIdMiddleware
from api.services import Services
from api.settings import Settings, get_settings

if TYPE_CHECKING:
    from storage.interfaces import Store
    from storage.owner_endpoint import OwnerEndpoint

log = logging.getLogger("switchboard.api")


def apply_restart_rule(store: "Store") -> None:
    """Fail the jobs and runs still open: their flow runs died with the previous start (api/custom_router/startup.py).
    Applied where the flow runs' executor restarts together with the store: by `switchboard serve` before its
    children start, and by an API process that owns the store itself. Never by API workers behind a store owner:
    restarting them leaves flow runs on a work pool running, and housekeeping reconciles jobs with Prefect."""
    from api.custom_router.startup import fail_interrupted_trainings
    from api.prompt_optimization.service import fail_interrupted_runs

    fail_interrupted_trainings(store)
    fail_interrupted_runs(store)


def build_services(settings: Settings, store: "Store", owns_store: bool = True) -> Services:
    """Load what the hot path needs once: catalogue, default router, session log, personalisation memory."""
    from api.auth_cache import AuthCache
    from api.catalogue import load_catalogue
    from api.routing.default_router import load_default_router
    from api.selection.feedback import FeedbackService
    from api.selection.personalization import FeedbackMemory
    from api.selection.preference_cache import PreferenceCache
    from api.selection.service import SelectionService
    from api.selection.sessions import SessionLog
    from storage import owner

    from api.custom_router.startup import custom_router_services

    if owns_store:
        apply_restart_rule(store)
    router = load_default_router()
    sessions = SessionLog(settings.events_dir, settings.session_flush_seconds).start()
    memory = FeedbackMemory()
    catalogue = load_catalogue()
    registry, training = custom_router_services(settings, store, catalogue, router.featurizer)
    preferences = PreferenceCache(store, settings.preference_cache_seconds).attach()
    selection = SelectionService(catalogue, router.featurizer, router, preferences, sessions, memory, registry)
    feedback = FeedbackService(sessions, memory, selection)
    feedback.rebuild()
    if not owns_store:  # other API workers record feedback too: learn from theirs as it is flushed
        feedback.follow_other_workers(settings.session_flush_seconds)
    prompt_optimization = prompt_optimization_service(settings, store, catalogue)
    return Services(settings=settings, store=store, rpc_token=owner.new_token(), selection=selection,
                    feedback=feedback, sessions=sessions, auth_cache=AuthCache(settings.auth_cache_seconds),
                    custom_routers=registry, router_training=training, prompt_optimization=prompt_optimization,
                    rate_limiter=rate_limiter(settings))


def rate_limiter(settings: Settings):
    from api.rate_limit import JOBS, SELECT, Limit, RateLimiter

    return RateLimiter({SELECT: Limit(settings.select_rate_limit_per_minute, settings.select_rate_limit_burst),
                        JOBS: Limit(settings.rate_limit_per_minute, settings.rate_limit_burst)})


def prompt_optimization_service(settings: Settings, store: "Store", catalogue):
    from api.launcher import PrefectLauncher
    from api.prompt_optimization.service import PromptOptimizationService

    return PromptOptimizationService(store, catalogue, settings, PrefectLauncher("prompt-optimization"))


def revocation_hook(services: Services):
    """In the owning API process a revocation through the RPC takes effect at once. API workers behind a store
    owner see it when their auth cache entry expires (SWITCHBOARD_AUTH_CACHE_SECONDS, README)."""
    def after_call(method: str) -> None:
        if method == "accounts.revoke_key":
            services.auth_cache.clear()
    return after_call


def tune_garbage_collector() -> None:
    """Keep the collector's pauses off the hot path's tail latency: everything loaded at start-up (catalogue,
    router, memory) is moved out of the collector's sight, and young-generation collections run less often.
    Request objects are short-lived and freed by reference counting, so this costs little memory."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def create_app(settings: Settings | None = None, *, publish_owner: bool = True) -> Litestar:
    from api.controllers.feedback import report_feedback
    from api.controllers.internal import OWNER_ROUTES
    from api.controllers.model_select import model_select
    from api.controllers.models import list_models
    from api.controllers.preferences import PreferenceController
    from api.controllers.prompts import PromptOptimizationController
    from api.controllers.router_training import train_custom_router
    from api.errors import NotFound
    from storage import owner
    from storage.owner_endpoint import OwnerEndpoint
    from storage.store import LocalStore

    settings = settings or get_settings()
    services_box: dict[str, Services] = {}
    owner_box: dict[str, OwnerEndpoint] = {}

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        # Behind a live store owner (`switchboard store`: several API workers, flows on work pools) this process
        # is a client; otherwise it opens the DuckDB file itself and serves the owner routes (a single worker).
        # An owner file whose owner does not answer may be a store owner restarting: waiting a little keeps this
        # process from opening the file and locking it out (a crashed single-process owner costs 10 s more).
        store = owner.open_store(settings.db_path, settings.run_dir, wait_for_owner_s=10.0)
        owns_store = isinstance(store, LocalStore)
        services = build_services(settings, store, owns_store)
        services_box["services"] = services
        app.state.services = services  # for tests and admin tooling
        if owns_store:
            owner_box["owner"] = OwnerEndpoint(store, services.rpc_token, after_call=revocation_hook(services))
        tune_garbage_collector()
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
            services.sessions.close()  # flush buffered sessions and feedback before the process ends
            store.close()

    def provide_services() -> Services:
        return services_box["services"]

    def provide_owner():  # no annotation: Litestar would resolve it at start-up, and it is imported lazily
        if "owner" not in owner_box:
            raise NotFound("this API process does not own the store; the store owner serves /internal")
        return owner_box["owner"]

    # The upload route alone accepts bodies up to the dataset limit plus room for the other form fields; the file's
    # own size is checked exactly (413 naming the limit) by the training service.
    train_custom_router.request_max_body_size = settings.upload_max_bytes + 256 * 1024
    app = Litestar(
        route_handlers=[list_models, PreferenceController, model_select, report_feedback, *OWNER_ROUTES,
                        train_custom_router, PromptOptimizationController],
        lifespan=[lifespan],
        dependencies={"services": Provide(provide_services, sync_to_thread=False),
                      "owner": Provide(provide_owner, sync_to_thread=False),
                      "user": Provide(current_user)},
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        request_max_body_size=settings.max_body_bytes,
        request_class=SafeJsonRequest,  # undecodable JSON (too deep, not UTF-8) is a 422, not a 500
        openapi_config=OpenAPIConfig(
            title="switchboard", version="0.1.0",
            description="LLM routing and prompt optimization (Not Diamond-compatible /v2 interface)",
            path="/schema", components=Components(security_schemes=SECURITY_SCHEMES)),
        debug=False,
    )
    # Wrap the whole handler chain, not one route: 404s and 405s also need their request id.
    app.asgi_handler = RequestIdMiddleware(app.asgi_handler)
    return app
