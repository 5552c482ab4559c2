"""Hands optimization runs to Prefect through flows.prefect_api; tests give the service a fake (house rule 8)."""

from __future__ import annotations

from typing import Any, Protocol

OPTIMIZE_PROMPT_DEPLOYMENT = "optimize-prompt/optimize-prompt"


class RunLauncher(Protocol):
    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str: ...


class PrefectRunLauncher:
    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str:
        from flows import prefect_api  # imported on the first optimization, never by modelSelect

        return await prefect_api.trigger(deployment, parameters, tags=["prompt-optimization"])
