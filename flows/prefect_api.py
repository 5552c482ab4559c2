"""All Prefect client calls live here: trigger a deployment, read and cancel flow runs, map states to JobStatus.

This is the seam the API and the CLI reach flows through (docs/architecture.md, rule 10): it imports nothing of
the project, and Prefect only inside the calls, so importing it costs nothing on the API's hot path.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any
from uuid import UUID

import anyio

# The project's deployments, as '<flow>/<deployment>': served by the embedded runner (flows/runner.py) or
# registered on a work pool (flows/deploy.py) under the same names (flows/registry.py).
HOUSEKEEPING = "housekeeping/housekeeping"
TRAIN_CUSTOM_ROUTER = "train-custom-router/train-custom-router"
OPTIMIZE_PROMPT = "optimize-prompt/optimize-prompt"
LEARN_FROM_TRAFFIC = "learn-from-traffic/learn-from-traffic"
JUDGE_TRAFFIC = "judge-traffic/judge-traffic"
ONBOARD_MODEL = "onboard-model/onboard-model"
REFRESH_MODEL_FIGURES = "refresh-model-figures/refresh-model-figures"

# Set by `switchboard serve` for the runner of its own Prefect server: before serving, the runner crashes the flow
# runs a dead runner left behind (settle_orphaned_runs; flows/runner.py).
SETTLE_ORPHANS_ENV = "SWITCHBOARD_RUNNER_SETTLES_ORPHANS"
ORPHAN_REASON = ("the flow runner stopped while this run was executing (it crashed or was killed); "
                 "start the job again")
# Housekeeping's words for a run left Pending past SWITCHBOARD_PENDING_RUN_TIMEOUT_S (crash_if_stuck_pending).
STUCK_PENDING_REASON = ("the flow run was handed to a worker but never started (the worker or its host stopped "
                        "with it); start the job again")

# Prefect state types -> the Not Diamond JobStatus (docs/architecture.md, "Jobs").
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


# Deployment ids by name, per Prefect API URL: a deployment keeps its id when the runner registers it again (by
# name), so each submission is one request (create the flow run) instead of two (look the name up, create).
_deployment_ids: dict[tuple[str, str], UUID] = {}


class NoPrefectServer(RuntimeError):
    """No Prefect server is configured: Prefect's client would start a temporary one inside this process, whose
    runs no worker executes (and whose server costs every other request here CPU)."""


def _import_client() -> None:
    # lazy: Prefect takes 1.5 s (quiet machine) to 8 s (busy) to import, and the API and the CLI import this module
    import prefect.client.orchestration  # noqa: F401
    import prefect.states  # noqa: F401
    from prefect.settings import get_current_settings

    if not get_current_settings().api.url:
        raise NoPrefectServer("no Prefect server is configured (PREFECT_API_URL): flows cannot be queued; "
                              "`switchboard serve` starts one")


def _not_found(exc: BaseException) -> bool:
    response = getattr(exc, "response", None)
    return type(exc).__name__ == "ObjectNotFound" or getattr(response, "status_code", None) == 404


async def trigger(deployment: str, parameters: dict[str, Any], tags: list[str] | None = None) -> str:
    """Create a flow run of `flow-name/deployment-name` and return its id at once (never waits for it)."""
    # The first import of Prefect's client runs in a worker thread: an API worker keeps answering other requests
    # meanwhile instead of stalling its event loop for seconds.
    await anyio.to_thread.run_sync(_import_client)
    # lazy: imported just above, off the event loop
    from prefect.client.orchestration import get_client
    from prefect.states import Scheduled

    async def create(client: Any, deployment_id: UUID) -> str:
        flow_run = await client.create_flow_run_from_deployment(deployment_id, parameters=parameters,
                                                                 state=Scheduled(), tags=tags or [])
        return str(flow_run.id)

    async with get_client() as client:
        key = (str(client.api_url), deployment)
        cached = _deployment_ids.get(key)
        if cached is not None:
            try:
                return await create(client, cached)
            except Exception as exc:
                if not _not_found(exc):
                    raise
                _deployment_ids.pop(key, None)  # removed and registered again (a new Prefect database)
        deployment_id = (await client.read_deployment_by_name(deployment)).id  # ObjectNotFound: not registered
        _deployment_ids[key] = deployment_id
        return await create(client, deployment_id)


async def flow_run_status(flow_run_id: str) -> tuple[str, str | None]:
    """(JobStatus, the state's message) of a flow run; ('failed', reason) when Prefect does not know it."""
    # lazy: Prefect takes ~1.5 s to import, and the API and the CLI import this module
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


async def crash_if_stuck_pending(flow_run_id: str, older_than_s: float, message: str) -> bool:
    """Crash a flow run that has been Pending for more than `older_than_s` seconds; True if it was crashed.

    Pending means a worker took the run but the run's own process never reported Running: a worker killed with
    its run (a host dying) leaves it so for ever, since only the run's process or its worker moves it on. A run
    that is Scheduled (no worker took it yet), Running or final is never touched. Not forced: Prefect's
    orchestration still refuses the transition if the run reached a final state in between."""
    # lazy: Prefect takes ~1.5 s to import, and the API and the CLI import this module
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.responses import SetStateStatus
    from prefect.exceptions import ObjectNotFound
    from prefect.states import Crashed

    async with get_client() as client:
        try:
            run = await client.read_flow_run(UUID(flow_run_id))
        except ObjectNotFound:
            return False
        state = run.state
        if state is None or state.type.value != "PENDING":
            return False
        if (datetime.now(timezone.utc) - state.timestamp).total_seconds() <= older_than_s:
            return False
        result = await client.set_flow_run_state(run.id, Crashed(message=message))
    return result.status == SetStateStatus.ACCEPT


async def cancel(flow_run_id: str) -> None:
    # lazy: Prefect takes ~1.5 s to import, and the API and the CLI import this module
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelling

    async with get_client() as client:
        await client.set_flow_run_state(UUID(flow_run_id), Cancelling(message="superseded"), force=True)


ORPHAN_STATES = ("RUNNING", "PENDING", "CANCELLING")


async def settle_orphaned_runs(api_url: str, message: str, housekeeping: str | None = None,
                               auth_string: str | None = None) -> list[str]:
    """Crash every flow run left Running/Pending by a flow runner that died, and queue `housekeeping` (if named and
    anything was crashed) so storage follows. Only for a Prefect server whose one runner is known to be dead: the
    embedded `serve` calls it before (re)starting its runner. Crashing frees the runs' concurrency slots, which a
    zombie `Running` optimize-prompt run would otherwise hold for ever."""
    # lazy: Prefect takes ~1.5 s to import, and the API and the CLI import this module
    from prefect.client.orchestration import PrefectClient
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType
    from prefect.deployments import run_deployment
    from prefect.states import Crashed

    wanted = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(
        any_=[StateType(s) for s in ORPHAN_STATES])))
    async with PrefectClient(api_url, auth_string=auth_string) as client:
        runs = await client.read_flow_runs(flow_run_filter=wanted)
        for run in runs:
            await client.set_flow_run_state(run.id, Crashed(message=message), force=True)
        if runs and housekeeping:
            await run_deployment(housekeeping, client=client, timeout=0, as_subflow=False)
    return [str(run.id) for run in runs]
