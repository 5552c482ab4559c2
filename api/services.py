"""App-wide services, built once at start-up and handed to controllers by dependency injection."""

from __future__ import annotations

from dataclasses import dataclass, field

from api.auth_cache import AuthCache
from api.rate_limit import RateLimiter
from api.selection.feedback import FeedbackService
from api.selection.service import SelectionService
from api.selection.sessions import SessionLog
from api.settings import Settings
from storage.interfaces import Store
from api.custom_router.registry import CustomRouterRegistry
from api.custom_router.submission import RouterTrainingService
from api.prompt_optimization.service import PromptOptimizationService


@dataclass
class Services:
    settings: Settings
    store: Store
    rpc_token: str
    selection: SelectionService
    feedback: FeedbackService
    sessions: SessionLog
    auth_cache: AuthCache = field(default_factory=AuthCache)
    custom_routers: CustomRouterRegistry | None = None
    router_training: RouterTrainingService | None = None
    prompt_optimization: PromptOptimizationService | None = None
    rate_limiter: RateLimiter | None = None  # None: no limits (tests that build Services by hand)
