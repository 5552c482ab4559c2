"""`switchboard deploy` (flows/deploy.py): on a process pool every deployment runs its flow runs unpiped
(`stream_output: false`), so a run outlives a worker killed under it (docs/benchmarks.md, "Issue 25, what was
left"); what the caller sets wins, and other pool types get only what the caller sets."""

from __future__ import annotations

from flows.deploy import pool_deployments


def test_process_pool_deployments_do_not_pipe_their_runs_through_the_worker():
    found = pool_deployments("pool")
    assert found and all(d.job_variables == {"stream_output": False} for d in found)
    env = {"SWITCHBOARD_DATA_DIR": "/data"}
    assert all(d.job_variables == {"stream_output": True, "env": env}
               for d in pool_deployments("pool", {"stream_output": True, "env": env}))
    assert all(d.job_variables == {"image": "img"} for d in pool_deployments("k8s", {"image": "img"}, "kubernetes"))
