"""`switchboard deploy` (flows/deploy.py): on a process pool every deployment runs its flow runs unpiped
(`stream_output: false`), so a run outlives a worker killed under it (docs/benchmarks.md, "Issue 25, what was
left"); every deployment's runs heartbeat, and one automation crashes a Running run whose heartbeats stop (its host
died). What the caller sets wins; other pool types get only what the caller sets and the heartbeat."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from flows.deploy import STOPPED_HEARTBEATS_REASON, ZOMBIE_AUTOMATION, deploy, pool_deployments

HEARTBEAT_150 = {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "150"}  # a 600 s bound, four heartbeats in it


def test_process_pool_deployments_do_not_pipe_their_runs_through_the_worker():
    found = pool_deployments("pool", heartbeat_timeout_s=600)
    assert found and all(d.job_variables == {"stream_output": False, "env": HEARTBEAT_150} for d in found)
    env = {"SWITCHBOARD_DATA_DIR": "/data"}
    assert all(d.job_variables == {"stream_output": True, "env": {**HEARTBEAT_150, **env}}
               for d in pool_deployments("pool", {"stream_output": True, "env": env}, heartbeat_timeout_s=600))
    assert all(d.job_variables == {"image": "img", "env": HEARTBEAT_150}
               for d in pool_deployments("k8s", {"image": "img"}, "kubernetes", heartbeat_timeout_s=600))


async def _automations_and_deployments(pool: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, WorkPoolFilter, WorkPoolFilterName

    async with get_client() as client:
        automations = await client.read_automations_by_name(ZOMBIE_AUTOMATION)
        registered = await client.read_deployments(
            work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[pool])))
    return automations, registered


async def _remove(automations, registered) -> None:
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        for automation in automations:
            await client.delete_automation(automation.id)
        for deployment in registered:
            await client.delete_deployment(deployment.id)


def test_deploying_twice_leaves_one_heartbeat_automation_watching_the_pools_deployments(prefect_harness):
    pool = "heartbeat-probe"
    names = deploy(pool, heartbeat_timeout_s=600)
    deploy(pool, heartbeat_timeout_s=240)  # again, with another bound: updated in place, not added
    automations, registered = asyncio.run(_automations_and_deployments(pool))
    try:
        assert sorted(d.name for d in registered) == sorted(name.split("/")[1] for name in names)
        assert all(d.job_variables["env"] == {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "60"} for d in registered)

        [automation] = automations
        trigger = automation.trigger
        assert automation.enabled and trigger.posture == "Proactive" and trigger.threshold == 1
        assert trigger.after == {"prefect.flow-run.heartbeat"} and trigger.expect == {"prefect.flow-run.*"}
        assert trigger.for_each == {"prefect.resource.id"} and trigger.within == timedelta(seconds=240)
        watched = trigger.match_related
        assert watched["prefect.resource.role"] == ["deployment"]
        assert sorted(watched["prefect.resource.id"]) == sorted(f"prefect.deployment.{d.id}" for d in registered)
        [action] = automation.actions
        assert (action.type, action.state.value, action.message, action.force) == \
            ("change-flow-run-state", "CRASHED", STOPPED_HEARTBEATS_REASON, False)
    finally:
        asyncio.run(_remove(automations, registered))
