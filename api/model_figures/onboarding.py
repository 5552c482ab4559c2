"""Onboarding a model the router has no figures for (docs/api.md, "Model figures and onboarding"): the API side.

`POST /v2/models/onboard` (and `switchboard models onboard`) starts a run of the onboard-model flow
(flows/model_figures/onboard.py) for the caller's organization, once per model: the flow asks the model the shipped
calibration suite (datasets/calibration/) and stores figures with intervals. modelSelect starts one by itself the
first time it lists a candidate without evidence that this service can call (SWITCHBOARD_ONBOARD_AUTO), off the
request path. A run is billed at the model's catalogue prices, or for a custom model the prices its caller gave
(the catalogue's, when the custom entry names a catalogue model); its figures serve its organization until an admin
publishes them to everyone.
"""

from __future__ import annotations

import logging
import threading

import anyio

from api.catalogue import Catalogue, billed_prices
from api.errors import Forbidden, NotFound, ServiceUnavailable, ValidationFailed
from api.launcher import ONBOARD_MODEL, FlowLauncher, why_not_queued
from api.model_figures.live import LiveFigures, no_evidence
from api.offload import off_loop
from api.prompt_optimization.credentials import Unreachable, key_variables, reachable
from api.routing.router import Candidate
from api.settings import OptimizeSettings, Settings
from storage.model_figure_records import OnboardingRun
from storage.records import User

log = logging.getLogger("switchboard.model_figures")
ROLE = "onboarding"  # the usage log's role and task type of an onboarding run's calls


class OnboardingService:
    def __init__(self, store, catalogue: Catalogue, settings: Settings, launcher: FlowLauncher,
                 figures: LiveFigures) -> None:
        self.store, self.catalogue, self.settings, self.launcher = store, catalogue, settings, launcher
        self.figures = figures
        self._asked: set[tuple[str, str]] = set()  # (organization, provider/model) auto-onboarding already tried
        self._asked_lock = threading.Lock()

    def prices(self, provider: str, model: str, input_price: float | None,
               output_price: float | None) -> tuple[float, float] | None:
        """USD per million (input, output) tokens: the catalogue's when it knows the model, else the caller's."""
        declared = None if input_price is None or output_price is None else (input_price, output_price)
        return billed_prices(self.catalogue, provider, model, declared)

    def check(self, user: User, provider: str, model: str, input_price: float | None,
              output_price: float | None) -> tuple[float, float]:
        """Refuse what could only fail or waste money: a model with figures already, one this service cannot
        call, one without prices (its spend could not be capped)."""
        router = self.figures.router_for(user.organization_id)
        if not no_evidence(router, [Candidate(provider, model, 0.0, 0.0)]):
            raise ValidationFailed(f"{provider}/{model} already has figures the router uses; nothing to measure",
                                   code="MODEL_HAS_FIGURES", details={"model": f"{provider}/{model}"})
        optimize = self.settings.optimize or OptimizeSettings()
        if not reachable(provider, optimize, model=model):
            missing = Unreachable(provider, ((f"{provider}/{model}", ROLE),), key_variables(provider))
            raise ValidationFailed("this service cannot call the model: " + missing.message(),
                                   code="PROVIDER_NOT_CONFIGURED", details={"unreachable": [missing.details()]})
        prices = self.prices(provider, model, input_price, output_price)
        if prices is None:
            raise ValidationFailed(f"{provider}/{model} is not in the catalogue: give its input_price and "
                                   "output_price (USD per million tokens) so its spend can be capped",
                                   code="PRICE_REQUIRED", details={"model": f"{provider}/{model}"})
        return prices

    async def start(self, user: User, provider: str, model: str, input_price: float | None = None,
                    output_price: float | None = None) -> tuple[OnboardingRun, bool]:
        """(the run, whether it was created now): an organization's model is onboarded once."""
        provider, model = provider.strip().lower(), model.strip()
        if self.prices(provider, model, input_price, output_price) is None:  # asked again, without the prices?
            existing = [r for r in self.figures.runs_for(user.organization_id) if r.status != "failed"
                        and (r.organization_id, r.provider, r.model) == (user.organization_id, provider, model)]
            if existing:
                return existing[-1], False
        prices = self.check(user, provider, model, input_price, output_price)
        started = await off_loop(self.store.model_figures.start_onboarding, user.organization_id, user.user_id,
                                 provider, model, prices[0], prices[1])
        run = started.run
        if not started.created:
            return run, False
        try:
            flow_run_id = await self.launcher.trigger(ONBOARD_MODEL, {"run_id": run.run_id})
        except Exception as exc:
            reason = why_not_queued(exc, ONBOARD_MODEL)
            await off_loop(self.store.model_figures.finish_onboarding, run.run_id, "failed", 0, 0.0, None,
                           f"could not queue the onboarding flow: {reason}")
            raise ServiceUnavailable(f"the onboarding flow could not be queued: {reason}; try again shortly",
                                     code="FLOW_UNAVAILABLE", headers={"Retry-After": "5"}) from exc
        updated = await off_loop(self.store.model_figures.set_onboarding_flow_run, run.run_id, flow_run_id)
        return updated or run, True

    def auto(self, user: User, candidates: list[tuple[str, str, float | None, float | None]]) -> None:
        """modelSelect listed candidates without evidence, (provider, model, input, output price) each: onboard
        the reachable ones this organization has not been offered yet, in a background thread (each start is a
        store call and a Prefect call). Refusals are expected (an unreachable provider) and only logged."""
        if not self.settings.onboard_auto:
            return
        todo = []
        with self._asked_lock:
            for provider, model, pin, pout in candidates:
                key = (user.organization_id, f"{provider}/{model}")
                if key not in self._asked and len(self._asked) < 100_000:
                    self._asked.add(key)
                    todo.append((provider, model, pin, pout))
        if todo:
            threading.Thread(target=self._auto, args=(user, todo), name="auto-onboarding", daemon=True).start()

    def _auto(self, user: User, todo: list[tuple[str, str, float | None, float | None]]) -> None:
        for provider, model, pin, pout in todo:
            try:
                run, created = anyio.run(self.start, user, provider, model, pin, pout)
                if created:
                    log.info("onboarding %s/%s for organization %s: run %s", provider, model, user.organization_id,
                             run.run_id)
            except Exception as exc:  # not reachable, no price, Prefect down: the next worker restart retries
                log.info("not onboarding %s/%s: %s", provider, model, getattr(exc, "message", exc))

    async def get(self, user: User, run_id: str) -> OnboardingRun:
        run = await off_loop(self.store.model_figures.onboarding, run_id)
        # An admin key is its organization's (docs/operations.md, "Keys"): it reads and publishes its own runs only.
        if run is None or (run.organization_id != user.organization_id and not run.published):
            raise NotFound(f"onboarding run {run_id!r} not found", code="ONBOARDING_NOT_FOUND",
                           details={"run_id": run_id})
        return run

    async def publish(self, user: User, run_id: str, published: bool) -> OnboardingRun:
        """An admin makes a completed run's figures serve every organization (or takes them back)."""
        if not user.is_admin:
            raise Forbidden("only an admin key may publish onboarded figures", code="ADMIN_REQUIRED")
        run = await self.get(user, run_id)
        if run.status != "completed":
            raise ValidationFailed(f"onboarding run {run_id!r} is {run.status}; only completed runs publish",
                                   code="ONBOARDING_NOT_COMPLETED", details={"run_id": run_id, "status": run.status})
        updated = await off_loop(self.store.model_figures.publish_onboarding, run_id, published)
        return updated or run
