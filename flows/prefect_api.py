"""All Prefect client calls live here: trigger a deployment, read and cancel flow runs, map states to JobStatus."""

from __future__ import annotations

from typing import Any
from uuid import UUID

# Prefect state types -> the spec's JobStatus (see ARCHITECTURE.md).
STATE_TO_JOB_STATUS = {
    "SCHEDULED": "queued",
    "PENDING": "queued",
    "RUNNING": "processing",
    "PAUSED": "processing",
    "CANCELLING": "processing",
    "COMPLETED": "completed",
    "FAILED": "failed",
    "CRASHED": "failed",
    "CANCELLED": "cancelled",
}
FINAL_JOB_STATUSES = frozenset({"completed", "failed", "cancelled"})


def job_status_for(state_type: str) -> str:
    return STATE_TO_JOB_STATUS.get(state_type.upper(), "processing")


async def trigger(deployment: str, parameters: dict[str, Any], tags: list[str] | None = None) -> str:
    """Create a flow run of `flow-name/deployment-name` and return its id at once (never waits for it)."""
    from prefect.deployments import run_deployment

    flow_run = await run_deployment(deployment, parameters=parameters, timeout=0, tags=tags or [])
    return str(flow_run.id)


async def flow_run_status(flow_run_id: str) -> tuple[str, str | None]:
    """(JobStatus, the state's message) of a flow run; ('failed', reason) when Prefect does not know it."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    async with get_client() as client:
        try:
            run = await client.read_flow_run(UUID(flow_run_id))
        except ObjectNotFound:
            return "failed", f"flow run {flow_run_id} is unknown to the Prefect server"
    if run.state is None:
        return "queued", None
    return job_status_for(run.state.type.value), run.state.message


async def cancel(flow_run_id: str) -> None:
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelling

    async with get_client() as client:
        await client.set_flow_run_state(UUID(flow_run_id), Cancelling(message="superseded"), force=True)
