"""How the API hands work to Prefect. The one seam between serving and the flows package: the API imports
flows/prefect_api.py (which imports no Prefect until a call needs it) and nothing else of flows
(docs/architecture.md, rule 10). Tests give the services a fake with the same methods (tests/support/fakes/launcher.py).
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from api.public_errors import public_reason
from flows import prefect_api
from flows.prefect_api import ONBOARD_MODEL, OPTIMIZE_PROMPT, TRAIN_CUSTOM_ROUTER

__all__ = ["FlowLauncher", "ONBOARD_MODEL", "OPTIMIZE_PROMPT", "PrefectLauncher", "TRAIN_CUSTOM_ROUTER"]
log = logging.getLogger("switchboard.api")


class FlowLauncher(Protocol):
    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str: ...

    async def cancel(self, flow_run_id: str) -> None: ...


def why_not_queued(exc: BaseException, deployment: str) -> str:
    """A reason a person can act on for a flow run that could not be created (exceptions may carry no message)."""
    if isinstance(exc, prefect_api.NoPrefectServer):
        return str(exc)  # names a setting, no address
    name = type(exc).__name__  # its text names internal addresses: it goes to the log (api/public_errors.py)
    if name == "ObjectNotFound":
        return f"the deployment {deployment!r} is not registered yet (the flow runner is starting or restarting)"
    if isinstance(exc, (ConnectionError, OSError)) or "Connect" in name or "Timeout" in name:
        log.warning("the Prefect server is not reachable: %s: %s", name, exc)
        return f"the Prefect server is not reachable ({name})"
    return public_reason(exc, f"creating a flow run of {deployment!r}")


class PrefectLauncher:
    """Creates flow runs of the project's deployments; `tag` marks them in the Prefect UI."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    async def trigger(self, deployment: str, parameters: dict[str, Any]) -> str:
        return await prefect_api.trigger(deployment, parameters, tags=[self.tag])

    async def cancel(self, flow_run_id: str) -> None:
        await prefect_api.cancel(flow_run_id)
