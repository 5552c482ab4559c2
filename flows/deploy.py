"""Deploy the project's flows to a Prefect work pool, so that `prefect worker start --pool NAME` executes them
(`switchboard deploy --pool NAME`). The production counterpart of the embedded flow runner (flows/runner.py).

The deployments are the runner's (flows.registry: same names, so the API triggers them as before), registered
with a module entrypoint ("flows.train_custom_router.train_custom_router") and no pull steps: a worker's flow run
imports the flow from the switchboard package installed where the worker runs (a virtual environment for a
process pool, the image for Docker or Kubernetes pools), so nothing is built or pushed here. A flow run reaches
storage through the store owner published in SWITCHBOARD_DATA_DIR (flows/storage_access.py), which the worker's
environment must therefore name.

A run whose host dies while it is Running would stay Running for ever (nothing else moves it on): every
deployment's runs send Prefect heartbeats, and an automation on the Prefect server (Prefect's guide "detect zombie
flows") crashes a run of these deployments whose heartbeats stop for `SWITCHBOARD_RUN_HEARTBEAT_TIMEOUT_S`;
housekeeping's reconcile-jobs then fails its job as for any crashed run (flows/housekeeping.py).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.client.schemas.objects import StateType
from prefect.deployments.runner import EntrypointType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
from prefect.exceptions import ObjectNotFound

from api.settings import get_settings
from flows.registry import deployments

PROCESS = "process"


async def ensure_pool(name: str, pool_type: str) -> bool:
    """Create the work pool if it does not exist; True when it was created. An existing pool is left as it is
    (its type and base job template may have been tuned in the UI)."""
    async with get_client() as client:
        try:
            await client.read_work_pool(name)
            return False
        except ObjectNotFound:
            await client.create_work_pool(WorkPoolCreate(name=name, type=pool_type))
            return True


# A process worker pipes each flow run's output through itself, so a worker killed (kill -9, out of memory) took
# its runs down with it and left them Pending or Running in Prefect for ever; unpiped, a run outlives its worker
# and ends as it would have (docs/benchmarks.md, "Issue 25, what was left"). Flow logs still reach Prefect's API.
PROCESS_JOB_VARIABLES = {"stream_output": False}

# A run heartbeats four times per bound, so the automation crashes it only after three heartbeats in a row were lost,
# not after one late one (Prefect's guide uses the same margin). The variable is set on every deployment, whatever
# the pool type (`env` is a job variable of every Prefect worker type), so that the bound holds whatever Prefect's
# default frequency is where the run executes.
HEARTBEATS_PER_BOUND = 4
MIN_HEARTBEAT_S = 30  # Prefect refuses a shorter interval (prefect/settings/models/flows.py)
HEARTBEAT_VARIABLE = "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"

ZOMBIE_AUTOMATION = "switchboard: crash flow runs whose heartbeats stopped"
STOPPED_HEARTBEATS_REASON = ("the flow run stopped sending heartbeats while running (its worker or host stopped with "
                             "it); start the job again")


def heartbeat_env(timeout_s: float) -> dict[str, str]:
    return {HEARTBEAT_VARIABLE: str(max(MIN_HEARTBEAT_S, int(timeout_s // HEARTBEATS_PER_BOUND)))}


def pool_deployments(pool: str, job_variables: dict[str, Any] | None = None, pool_type: str = PROCESS,
                     heartbeat_timeout_s: float | None = None) -> list[Any]:
    """What the caller sets wins, its `env` merged over the heartbeat variable."""
    timeout_s = heartbeat_timeout_s or get_settings().run_heartbeat_timeout_s
    caller = dict(job_variables or {})
    env = {**heartbeat_env(timeout_s), **caller.pop("env", {})}
    defaults = PROCESS_JOB_VARIABLES if pool_type == PROCESS else {}
    return deployments(work_pool_name=pool, entrypoint_type=EntrypointType.MODULE_PATH,
                       job_variables={**defaults, **caller, "env": env})


def zombie_automation(deployment_ids: list[UUID], timeout_s: float) -> AutomationCore:
    """After each heartbeat of a run of these deployments, expect another event of that run (a heartbeat or a state
    change) within `timeout_s`, else crash it. Runs of other deployments on the same Prefect server (their
    heartbeats may be rarer) are not watched; a run that ended is not touched (Prefect refuses a final state's
    move to Crashed unless forced, and the action does not force)."""
    return AutomationCore(
        name=ZOMBIE_AUTOMATION,
        description="Crash a Running flow run of switchboard's deployments whose host stopped (`switchboard deploy`)",
        trigger=EventTrigger(
            after={"prefect.flow-run.heartbeat"},
            expect={"prefect.flow-run.*"},
            match={"prefect.resource.id": "prefect.flow-run.*"},
            match_related={"prefect.resource.role": "deployment",
                           "prefect.resource.id": [f"prefect.deployment.{i}" for i in deployment_ids]},
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=timeout_s),
        ),
        actions=[ChangeFlowRunState(state=StateType.CRASHED, message=STOPPED_HEARTBEATS_REASON)],
    )


async def ensure_zombie_automation(deployment_ids: list[UUID], timeout_s: float) -> UUID:
    """Create the automation, or update it in place (by name) so that deploying again never adds a second one."""
    automation = zombie_automation(deployment_ids, timeout_s)
    async with get_client() as client:
        found = await client.read_automations_by_name(ZOMBIE_AUTOMATION)
        if not found:
            return await client.create_automation(automation)
        kept, *duplicates = found  # duplicates only if two deploys raced to create it
        await client.update_automation(kept.id, automation)
        for duplicate in duplicates:
            await client.delete_automation(duplicate.id)
        return kept.id


def deploy(pool: str, pool_type: str = PROCESS, create_pool: bool = True,
           job_variables: dict[str, Any] | None = None, heartbeat_timeout_s: float | None = None) -> list[str]:
    """Register every deployment on `pool` and the automation that crashes their runs whose heartbeats stop;
    returns the deployments' '<flow>/<deployment>' names."""
    timeout_s = heartbeat_timeout_s or get_settings().run_heartbeat_timeout_s
    if create_pool:
        asyncio.run(ensure_pool(pool, pool_type))
    names, ids = [], []
    for deployment in pool_deployments(pool, job_variables, pool_type, timeout_s):
        ids.append(deployment.apply(work_pool_name=pool))
        names.append(f"{deployment.flow_name}/{deployment.name}")
    asyncio.run(ensure_zombie_automation(ids, timeout_s))
    return names
