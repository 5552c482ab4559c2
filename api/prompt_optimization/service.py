"""Prompt optimization runs: start (validate, one open run per user, queue the flow), status, results, costs."""

from __future__ import annotations

import json
import logging
from collections import Counter

import msgspec

from api.budgets import MIN_CALL_USD, BudgetGate, spender_of
from api.catalogue import Catalogue
from api.errors import Forbidden, NotFound, ServiceUnavailable, TooManyRequests, ValidationFailed
from api.launcher import OPTIMIZE_PROMPT, FlowLauncher, why_not_queued
from api.offload import off_loop
from api.prompt_optimization.credentials import models_called, unreachable
from api.prompt_optimization.usage_log import run_usage
from api.prompt_optimization.validation import check_access, validate
from api.schemas.prompt_optimization import (
    CostResponse,
    LLMRequestMetric,
    OptimizationResults,
    OptimizeRequest,
    OriginResult,
    TargetResult,
    UsageRecord,
)
from api.settings import OptimizeSettings, Settings
from storage.optimization_records import ORIGIN, OptimizationRun
from storage.records import User

log = logging.getLogger("switchboard.prompt_optimization")


def _json(raw: str | None) -> dict | None:
    return json.loads(raw) if raw else None


class PromptOptimizationService:
    def __init__(self, store, catalogue: Catalogue, settings: Settings, launcher: FlowLauncher,
                 budget: BudgetGate | None = None) -> None:
        self.store, self.catalogue, self.settings, self.launcher = store, catalogue, settings, launcher
        self.budget = budget

    async def start(self, req: OptimizeRequest, user: User) -> str:
        check_access(user)
        valid = validate(req, user, self.catalogue)
        self.check_reachable(valid.spec)
        if self.budget is not None:
            # A run whose budget has nothing left is refused now (429 BUDGET_EXCEEDED) rather than queued to fail
            # at its first call; the run's calls are each checked again (flows/prompt_opt/llm.py).
            hold = await off_loop(self.budget.reserve, spender_of(user), MIN_CALL_USD)
            self.budget.settle(hold, 0.0)
        started = await off_loop(
            self.store.optimizations.start, user.user_id, user.organization_id, json.dumps(valid.spec), valid.evaluation_metric,
            valid.evaluation_config, req.prototype_mode, valid.spec["origin"], valid.spec["targets"], user.key_id)
        if started.run is None:
            raise TooManyRequests(f"prompt optimization run {started.running_run_id} is still in progress; one run"
                                  " per user at a time: wait for it to complete or fail", code="CONCURRENT_RUN_LIMIT",
                                  details={"running_run_id": started.running_run_id})
        run_id = started.run.run_id
        try:
            flow_run_id = await self.launcher.trigger(OPTIMIZE_PROMPT, {"run_id": run_id})
        except Exception as exc:
            reason = why_not_queued(exc, OPTIMIZE_PROMPT)
            await off_loop(self.store.optimizations.finish, run_id, "failed",
                           f"could not queue the optimization flow: {reason}")
            raise ServiceUnavailable(f"the optimization flow could not be queued: {reason}; try again shortly",
                                     code="FLOW_UNAVAILABLE", headers={"Retry-After": "5"}) from exc
        await off_loop(self.store.jobs.mark_queued, run_id, flow_run_id)
        return run_id

    def check_reachable(self, spec: dict) -> None:
        """Refuse a run that needs a model this service has no credentials or base URL for: it could only fail."""
        optimize = self.settings.optimize or OptimizeSettings()
        missing = unreachable(models_called(spec, optimize), optimize)
        if missing:
            raise ValidationFailed("this service cannot call every model the run needs; "
                                   + "; ".join(m.message() for m in missing), code="PROVIDER_NOT_CONFIGURED",
                                   details={"unreachable": [m.details() for m in missing]})

    async def _own(self, run_id: str, user: User, foreign_is_404: bool = False) -> OptimizationRun:
        check_access(user)
        run = await off_loop(self.store.optimizations.get, run_id)
        if run is not None and user.is_admin and run.organization_id == user.organization_id:
            return run  # an admin key reads (these routes only read) the runs of its organization's users
        if run is None or (foreign_is_404 and run.user_id != user.user_id):
            raise NotFound(f"optimization run {run_id!r} not found", code="RUN_ID_NOT_FOUND",
                           details={"optimization_run_id": run_id})
        if run.user_id != user.user_id:
            raise Forbidden(f"optimization run {run_id!r} belongs to another user", code="RUN_ID_NOT_OWNED",
                            details={"optimization_run_id": run_id})
        return run

    async def status(self, run_id: str, user: User) -> tuple[str, int | None, str | None]:
        run = await self._own(run_id, user, foreign_is_404=True)  # the interface gives status no 403
        position = None
        if run.status == "queued":
            position = await off_loop(self.store.optimizations.queue_position, run_id)
            if position is None:  # it left the queue between the two reads: answer where it is now
                run = await self._own(run_id, user, foreign_is_404=True)
        return run.status, position, run.error

    async def results(self, run_id: str, user: User) -> OptimizationResults:
        run = await self._own(run_id, user)
        usage = await off_loop(run_usage, self.settings.events_dir, run_id)
        spec = json.loads(run.request)
        requests = Counter(f"{r['provider']}/{r['model']}" for r in usage)
        origin, targets = None, []
        if spec.get("origin") is None and spec.get("origin_score") is not None:  # a baseline score without a model
            origin = OriginResult(model_name=None, score=spec["origin_score"], evals=None, cost=0.0,
                                  system_prompt=spec["system_prompt"], user_message_template=spec["template"],
                                  result_status="completed")
        run_closed = run.status in ("completed", "failed", "cancelled")
        for r in run.results:
            name = f"{r.provider}/{r.model}"
            done = r.result_status == "completed"
            if run_closed and r.result_status in ("created", "queued", "processing"):
                # The run was closed from outside the flow (housekeeping saw its flow run crash): nothing is running.
                r = msgspec.structs.replace(r, result_status="failed", error=r.error or run.error)
            if r.position == ORIGIN:
                origin = OriginResult(model_name=name, score=r.pre_score, evals=_json(r.pre_evals), cost=r.cost,
                                      system_prompt=spec["system_prompt"], user_message_template=spec["template"],
                                      result_status=r.result_status, error=r.error)
                continue
            improvement = (r.post_score - r.pre_score) if done and r.pre_score is not None else None
            targets.append(TargetResult(
                model_name=name, pre_optimization_score=r.pre_score, pre_optimization_evals=_json(r.pre_evals),
                post_optimization_score=r.post_score if done else None,
                post_optimization_evals=_json(r.post_evals) if done else None, cost=r.cost,
                system_prompt=r.system_prompt if done else None,
                user_message_template=r.user_message_template if done else None,
                user_message_template_fields=spec["fields"], result_status=r.result_status,
                score_improvement=improvement, evaluation_type=spec["metric"], error=r.error))
        return OptimizationResults(
            id=run.run_id, created_at=run.created_at, updated_at=run.updated_at, origin_model=origin,
            target_models=targets, job_status=run.status, evaluation_metric=run.evaluation_metric,
            evaluation_config=run.evaluation_config,
            llm_request_metrics=[LLMRequestMetric(model=m, num_requests=n) for m, n in sorted(requests.items())],
            prototype_mode=run.prototype_mode, error=run.error)

    async def costs(self, run_id: str, user: User) -> CostResponse:
        await self._own(run_id, user)
        usage = await off_loop(run_usage, self.settings.events_dir, run_id)
        records = [msgspec.convert({**r, "optimization_run_id": r["adaptation_run_id"]}, UsageRecord)
                   for r in usage]
        return CostResponse(optimization_run_id=run_id, total_cost=sum(r.total_cost for r in records),
                            usage_records=records)
