"""Prompt optimization: /v2/prompt/optimize*, and the older /v2/prompt/adapt* names for the same runs."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, JSONBody

from api.auth import SECURITY
from api.dependencies import component
from api.openapi_docs import error_responses
from api.prompt_optimization.service import PromptOptimizationService
from api.schemas.prompt_optimization import (
    AdaptResponse,
    AdaptStatusResponse,
    CostResponse,
    OptimizationResults,
    OptimizeRequest,
    OptimizeResponse,
    OptimizeStatusResponse,
)
from storage.records import User


class PromptOptimizationController(Controller):
    path = "/v2/prompt"
    tags = ["prompt optimization"]
    security = SECURITY
    dependencies = {"runs": component("prompt_optimization")}

    @post("/optimize", operation_id="optimize", status_code=200, summary="Start a prompt optimization",
          responses=error_responses(404, 429, 503))
    async def optimize(self, data: JSONBody[OptimizeRequest], user: NamedDependency[User],
                       runs: NamedDependency[PromptOptimizationService]) -> OptimizeResponse:
        return OptimizeResponse(optimization_run_id=await runs.start(data, user))

    @get("/optimizeStatus/{optimization_run_id:str}", operation_id="optimizeStatus",
         summary="Read an optimization's status", responses=error_responses(404))
    async def status(self, optimization_run_id: FromPath[str], user: NamedDependency[User],
                     runs: NamedDependency[PromptOptimizationService]) -> OptimizeStatusResponse:
        status, position, error = await runs.status(optimization_run_id, user)
        return OptimizeStatusResponse(optimization_run_id, status, position, error)

    @get("/optimizeResults/{optimization_run_id:str}", operation_id="optimizeResults",
         summary="Read an optimization's results", responses=error_responses(403, 404))
    async def results(self, optimization_run_id: FromPath[str], user: NamedDependency[User],
                      runs: NamedDependency[PromptOptimizationService]) -> OptimizationResults:
        return await runs.results(optimization_run_id, user)

    @get("/optimize/{optimization_run_id:str}/costs", operation_id="optimizeCosts",
         summary="Read an optimization's LLM cost", responses=error_responses(403, 404))
    async def costs(self, optimization_run_id: FromPath[str], user: NamedDependency[User],
                    runs: NamedDependency[PromptOptimizationService]) -> CostResponse:
        return await runs.costs(optimization_run_id, user)

    # --- the older names: the same runs, identified as adaptation_run_id ---------------------------------------
    @post("/adapt", operation_id="adapt", status_code=200, summary="Start a prompt optimization (older name)",
          responses=error_responses(404, 429, 503))
    async def adapt(self, data: JSONBody[OptimizeRequest], user: NamedDependency[User],
                    runs: NamedDependency[PromptOptimizationService]) -> AdaptResponse:
        return AdaptResponse(adaptation_run_id=await runs.start(data, user))

    @get("/adaptStatus/{adaptation_run_id:str}", operation_id="adaptStatus",
         summary="Read an optimization's status (older name)", responses=error_responses(404))
    async def adapt_status(self, adaptation_run_id: FromPath[str], user: NamedDependency[User],
                           runs: NamedDependency[PromptOptimizationService]) -> AdaptStatusResponse:
        status, position, error = await runs.status(adaptation_run_id, user)
        return AdaptStatusResponse(adaptation_run_id, status, position, error)

    @get("/adaptResults/{adaptation_run_id:str}", operation_id="adaptResults",
         summary="Read an optimization's results (older name)", responses=error_responses(403, 404))
    async def adapt_results(self, adaptation_run_id: FromPath[str], user: NamedDependency[User],
                            runs: NamedDependency[PromptOptimizationService]) -> OptimizationResults:
        return await runs.results(adaptation_run_id, user)
