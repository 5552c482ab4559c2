"""The deployments the flow runner serves, by name. The API triggers them as '<flow>/<deployment>'."""

from __future__ import annotations

from typing import Any

HOUSEKEEPING = "housekeeping/housekeeping"
TRAIN_CUSTOM_ROUTER = "train-custom-router/train-custom-router"


def deployments() -> list[Any]:
    from flows.housekeeping import housekeeping
    from flows.train_custom_router import train_custom_router
    from flows.train_default_router import train_default_router_flow

    return [
        housekeeping.to_deployment(name="housekeeping", interval=600,
                                   description="Reconcile jobs with Prefect, compact event logs, checkpoint DuckDB"),
        train_custom_router.to_deployment(name="train-custom-router",
                                          description="Train a preference's custom router from an uploaded CSV"),
        train_default_router_flow.to_deployment(
            name="train-default-router",
            description="Retrain the shipped default router on the public RouteLLM data; publish=True replaces it"),
    ]
