"""What an API process builds once at start-up: the restart rule, then every component (api/services.py)."""

from __future__ import annotations

import atexit
import gc

from threadpoolctl import threadpool_limits

from api.auth import Authenticator
from api.budgets import UNBUDGETED_RECHECK_S, BudgetGate
from api.auth_cache import AuthCache
from api.client_address import parse_networks
from api.catalogue import load_catalogue
from api.custom_router.startup import custom_router_services
from api.gateway.calls import CallLog
from api.gateway.judge_sampling import JudgeSampler
from api.gateway.service import GatewayService
from api import deployments
from api.launcher import PrefectLauncher
from api.model_figures.live import CurrentRouter, LiveFigures
from api.model_figures.onboarding import OnboardingService
from api.observability import hooks
from api.preferences import PreferenceService
from api.prompt_optimization.service import PromptOptimizationService
from api.rate_limit import JOBS, KEY_LOOKUP, SELECT, Limit, RateLimiter
from api.readiness import Readiness
from api.restart_rule import apply_restart_rule
from api.routing.calibration_pool import pool_scorer
from api.routing.capability import read_figures
from api.routing.default_router import DEFAULT_PRIOR_PATH, load_default_router
from api.routing.dial import TrafficDial
from api.selection.feedback import FeedbackService
from api.selection.learned import LearnedCorrections
from api.selection.personalization import FeedbackMemory
from api.selection.preference_cache import PreferenceCache
from api.selection.service import SelectionService
from api.selection.sessions import SessionLog
from api.key_admin import KeyAdminService
from api.services import Services
from api.usage import UsageService
from api.settings import OptimizeSettings, Settings
from storage import owner
from storage.interfaces import Store


def rate_limiter(settings: Settings) -> RateLimiter:
    return RateLimiter({SELECT: Limit(settings.select_rate_limit_per_minute, settings.select_rate_limit_burst),
                        JOBS: Limit(settings.rate_limit_per_minute, settings.rate_limit_burst),
                        KEY_LOOKUP: Limit(settings.key_lookup_rate_limit_per_minute, settings.key_lookup_rate_limit_burst)})


def build_services(settings: Settings, store: Store) -> Services:
    """Load what the hot path needs once: catalogue, default router, session log, personalisation memory."""
    if store.owns_file:
        apply_restart_rule(store)
    router = load_default_router(settings.default_router_dir, settings.model_figures_path)
    # Refreshed and onboarded figures swap in on every worker through the change feed (api/model_figures/live.py).
    figures = LiveFigures(store, router, read_figures(settings.model_figures_path or DEFAULT_PRIOR_PATH)).attach()
    sessions = SessionLog(settings.events_dir, settings.session_flush_seconds).start()
    memory = FeedbackMemory()
    catalogue = load_catalogue()
    # which source configures each provider (never a key); a broken deployments file stops the start here
    deployments.log_sources(sorted(catalogue.providers()), settings.optimize or OptimizeSettings())
    registry, training = custom_router_services(settings, store, catalogue, router.featurizer)
    preference_cache = PreferenceCache(store, settings.preference_cache_seconds).attach()
    dial = TrafficDial(pool_scorer(CurrentRouter(figures), router.featurizer)).start()
    selection = SelectionService(catalogue, router.featurizer, router, preference_cache, sessions, memory, registry,
                                 dial, sticky_margin=settings.gateway_sticky_margin,
                                 learned=LearnedCorrections(store, router.featurizer.version).attach(),
                                 figures=figures)
    if settings.metrics_enabled or settings.tracing:
        hooks.observe_decisions(selection)
    feedback = FeedbackService(sessions, memory, selection)
    feedback.rebuild()
    if not store.owns_file:  # other API workers record feedback too: learn from theirs as it is flushed
        feedback.follow_other_workers(settings.session_flush_seconds)
    calls = CallLog(settings.events_dir, settings.session_flush_seconds).start()
    budget = BudgetGate(store.budgets, settings.budget_default_output_tokens, UNBUDGETED_RECHECK_S)
    hooks.observe_calls(calls)
    gateway = GatewayService(selection, calls,
                             store.preferences, settings,
                             JudgeSampler(settings.events_dir, settings.session_flush_seconds).start(), budget)
    runs = PromptOptimizationService(store, catalogue, settings, PrefectLauncher("prompt-optimization"), budget)
    return Services(
        settings=settings, store=store, rpc_token=owner.new_token(),
        authenticator=Authenticator(store.accounts, AuthCache(settings.auth_cache_seconds), rate_limiter(settings),
                                    trusted_proxies=parse_networks(settings.trusted_proxies)).attach(store),
        selection=selection, feedback=feedback, sessions=sessions,
        preferences=PreferenceService(store.preferences, store.routers, settings.layout, store.learning),
        custom_routers=registry, router_training=training, prompt_optimization=runs,
        readiness=Readiness(store, settings.prefect_api_url, settings.prefect_auth_string), gateway=gateway,
        figures=figures, onboarding=OnboardingService(store, catalogue, settings, PrefectLauncher("onboarding"),
                                                      figures),
        budget=budget, key_admin=KeyAdminService(store, settings.key_rotation_grace_s),
        usage=UsageService(store, settings.events_dir))


def single_threaded_blas() -> None:
    """One BLAS thread in the API. Requests run side by side on worker threads, so a second BLAS thread buys
    nothing, and for the small products of routing (a custom router's kNN scan: thousands of rows x 192) OpenBLAS
    splitting one product over two threads makes a request wait on a thread another request's core is busy with:
    measured with 4 concurrent requests on 2 busy cores, the custom router's p99 fell from 170-310 ms to 7-9 ms."""
    threadpool_limits(limits=1, user_api="blas")


def tune_garbage_collector() -> None:
    """Keep the collector's pauses off the hot path's tail latency: everything loaded at start-up (catalogue,
    router, memory) is moved out of the collector's sight, and young-generation collections run less often.
    Request objects are short-lived and freed by reference counting, so this costs little memory."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    global _unfreeze_registered
    if not _unfreeze_registered:
        # Frozen objects are never collected, not even at exit, where DuckDB's bindings (nanobind) then report
        # each of its still-live objects as leaked: hand them back to the collector for the last collection.
        atexit.register(_unfreeze_at_exit)
        _unfreeze_registered = True


_unfreeze_registered = False


def _unfreeze_at_exit() -> None:
    gc.unfreeze()
    gc.collect()
