"""Deploy the project's flows to a Prefect work pool, so that `prefect worker start --pool NAME` executes them
(`switchboard deploy --pool NAME`). The production counterpart of the embedded flow runner (flows/runner.py).

The deployments are the runner's (flows.registry: same names, so the API triggers them as before), registered
with a module entrypoint ("flows.train_custom_router.train_custom_router") and no pull steps: a worker's flow run
imports the flow from the switchboard package installed where the worker runs (a virtual environment for a
process pool, the image for Docker or Kubernetes pools), so nothing is built or pushed here. A flow run reaches
storage through the store owner published in SWITCHBOARD_DATA_DIR (flows/storage_access.py), which the worker's
environment must therefore name.
"""

from __future__ import annotations

import asyncio
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.deployments.runner import EntrypointType
from prefect.exceptions import ObjectNotFound

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


def pool_deployments(pool: str, job_variables: dict[str, Any] | None = None,
                     pool_type: str = PROCESS) -> list[Any]:
    defaults = PROCESS_JOB_VARIABLES if pool_type == PROCESS else {}
    return deployments(work_pool_name=pool, entrypoint_type=EntrypointType.MODULE_PATH,
                       job_variables={**defaults, **(job_variables or {})})


def deploy(pool: str, pool_type: str = PROCESS, create_pool: bool = True,
           job_variables: dict[str, Any] | None = None) -> list[str]:
    """Register every deployment on `pool`; returns their '<flow>/<deployment>' names."""
    if create_pool:
        asyncio.run(ensure_pool(pool, pool_type))
    names = []
    for deployment in pool_deployments(pool, job_variables, pool_type):
        deployment.apply(work_pool_name=pool)
        names.append(f"{deployment.flow_name}/{deployment.name}")
    return names
