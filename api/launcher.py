"""How the API hands work to Prefect. The one seam between serving and the flows package: the API imports
flows/prefect_api.py (which imports no Prefect until a call needs it) and nothing else of flows
(docs/architecture.md, rule 10). Tests give the services a fake with the same methods (tests/support/fakes/launcher.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from flows import prefect_api
from flows.prefect_api import OPTIMIZE_PROMPT, TRAIN_CUSTOM_ROUTER

__all__ = ["FlowLauncher", "OPTIMIZE_PROMPT", "PrefectLauncher", "TRAIN_CUSTOM_ROUTER"]


class FlowLauncher(Protocol):
    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str: ...

    async def cancel(self, flow_run_id: str) -> None: ...


def why_not_queued(exc: BaseException, deployment: str) -> str:
    """A reason a person can act on for a flow run that could not be created (exceptions may carry no message)."""
    name = type(exc).__name__
    detail = str(exc).strip()
    named = f"{name}: {detail}" if detail else name
    if name == "ObjectNotFound":
        return f"the deployment {deployment!r} is not registered yet (the flow runner is starting or restarting)"
    if isinstance(exc, (ConnectionError, OSError)) or "Connect" in name or "Timeout" in name:
        return f"the Prefect server is not reachable ({named})"
    return named


class PrefectLauncher:
    """Creates flow runs of the project's deployments; `tag` marks them in the Prefect UI."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str:
        return await prefect_api.trigger(deployment, parameters, tags=[self.tag])

    async def cancel(self, flow_run_id: str) -> None:
        await prefect_api.cancel(flow_run_id)
