"""What the API builds once at start-up (api/app.py), kept in the app's state. Controllers never see this whole:
each names the one component it uses (api/dependencies.py)."""

from __future__ import annotations

from dataclasses import dataclass

from api.auth import Authenticator
from api.budgets import BudgetGate
from api.custom_router.registry import CustomRouterRegistry
from api.custom_router.submission import RouterTrainingService
from api.gateway.service import GatewayService
from api.key_admin import KeyAdminService
from api.model_figures.live import LiveFigures
from api.model_figures.onboarding import OnboardingService
from api.preferences import PreferenceService
from api.prompt_optimization.service import PromptOptimizationService
from api.readiness import Readiness
from api.selection.feedback import FeedbackService
from api.selection.service import SelectionService
from api.selection.sessions import SessionLog
from api.settings import Settings
from api.usage import UsageService
from storage.interfaces import Store


@dataclass
class Services:
    settings: Settings
    store: Store
    rpc_token: str  # the owner token this process serves /internal with, when it owns the store
    authenticator: Authenticator
    selection: SelectionService
    feedback: FeedbackService
    sessions: SessionLog
    preferences: PreferenceService
    custom_routers: CustomRouterRegistry
    router_training: RouterTrainingService
    prompt_optimization: PromptOptimizationService
    readiness: Readiness
    gateway: GatewayService
    figures: LiveFigures  # refreshed and onboarded figures, per organization (api/model_figures/live.py)
    onboarding: OnboardingService
    budget: BudgetGate
    key_admin: KeyAdminService
    usage: UsageService
