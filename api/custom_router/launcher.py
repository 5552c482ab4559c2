"""How the API hands work to Prefect. The real launcher delegates to flows.prefect_api (the one module that
talks to Prefect); tests give the service a fake with the same two methods (house rule 8)."""

from __future__ import annotations

from typing import Any, Protocol

TRAIN_CUSTOM_ROUTER_DEPLOYMENT = "train-custom-router/train-custom-router"


class FlowLauncher(Protocol):
    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str: ...

    async def cancel(self, flow_run_id: str) -> None: ...


class PrefectLauncher:
    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str:
        from flows import prefect_api  # Prefect is imported on the first upload, never by modelSelect

        return await prefect_api.trigger(deployment, parameters, tags=["custom-router"])

    async def cancel(self, flow_run_id: str) -> None:
        from flows import prefect_api

        await prefect_api.cancel(flow_run_id)
