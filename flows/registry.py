"""The project's deployments, by name. The API triggers them as '<flow>/<deployment>', wherever they execute: served
by the embedded flow runner (flows/runner.py), or on a work pool's workers (flows/deploy.py)."""

from __future__ import annotations

from typing import Any

from api.settings import get_settings
from flows.housekeeping import housekeeping
from flows.learning.flow import learn_from_traffic
from flows.learning.judge import judge_traffic
from flows.model_figures.onboard import onboard_model
from flows.model_figures.refresh import refresh_model_figures
from flows.optimize_prompt import optimize_prompt
from flows.train_custom_router import train_custom_router
from flows.train_default_router import train_default_router_flow


def deployments(**options: Any) -> list[Any]:
    """`options` go to every `to_deployment` call (flows.deploy passes the work pool and a module entrypoint)."""

    settings = get_settings()
    return [
        housekeeping.to_deployment(name="housekeeping", interval=settings.housekeeping_interval_s,
                                   description="Reconcile jobs with Prefect, compact event logs, checkpoint DuckDB",
                                   **options),
        learn_from_traffic.to_deployment(name="learn-from-traffic", interval=settings.learning_interval_s,
                                         description="Fit a correction of each preference's router from its "
                                                     "feedback; promote it only when it scores better off-policy",
                                         **options),
        # One run at a time: two at once would grade the same samples and each spend what is left of a budget.
        judge_traffic.to_deployment(name="judge-traffic", interval=settings.judge_interval_s, concurrency_limit=1,
                                    description="Grade the gateway answers sampled for a judge (opt-in per "
                                                "preference), within each preference's daily budget",
                                    **options),
        # Off unless SWITCHBOARD_MODEL_FIGURES_REFRESH_INTERVAL_S is set; always there to be triggered by hand.
        refresh_model_figures.to_deployment(name="refresh-model-figures", concurrency_limit=1,
                                            interval=settings.model_figures_refresh_interval_s or None,
                                            description="Read public model figures from SWITCHBOARD_MODEL_FIGURES_"
                                                        "SOURCE, check them and swap them in on every API worker",
                                            **options),
        onboard_model.to_deployment(name="onboard-model",
                                    description="Ask a model without figures the calibration suite (within its "
                                                "call and spend caps) and serve the measured figures",
                                    **options),
        train_custom_router.to_deployment(name="train-custom-router",
                                          description="Train a preference's custom router from an uploaded CSV",
                                          **options),
        train_default_router_flow.to_deployment(
            name="train-default-router",
            description="Retrain the shipped default router on the public RouteLLM data; publish=True replaces it",
            **options),
        # Runs beyond the limit wait in Prefect (AwaitingConcurrencySlot, i.e. `queued`): the queue is Prefect's.
        optimize_prompt.to_deployment(name="optimize-prompt", concurrency_limit=settings.optimize.concurrent_runs,
                                      description="Optimize a prompt for each target model (DSPy GEPA) and score it",
                                      **options),
    ]
