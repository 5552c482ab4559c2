"""The embedded runner serves deployments rebuilt from another interpreter's description (flows/served_deployments.py):
they must be what flows.registry builds, field for field as Prefect sends them, and the runner must hold no flow's
libraries."""

from __future__ import annotations

import json
import subprocess
import sys

from flows.registry import deployments
from flows.served_deployments import describe, rebuild

# What a flow brings that Prefect alone does not: an idle runner holds none of it.
FLOW_LIBRARIES = ("dspy", "litellm", "pandas", "sklearn", "xgboost", "scipy", "polars", "pyarrow", "numpy", "duckdb",
                  "flows.registry", "flows.optimize_prompt", "flows.housekeeping", "flows.train_default_router",
                  "api.routing")


def sent(deployment) -> dict:
    """What apply() sends for a deployment: the fields set (`_update`) and the private parts (`_create`)."""
    return {"fields": deployment.model_dump(mode="json", exclude_unset=True), "path": deployment._path,
            "entrypoint_type": deployment.entrypoint_type,
            "schema": deployment._parameter_openapi_schema.model_dump(mode="json", exclude_unset=True),
            "version_from_flow": deployment._version_from_flow, "full_name": deployment.full_name}


def test_rebuilt_deployments_send_what_the_registry_builds():
    built = deployments()
    rebuilt = rebuild(json.loads(json.dumps(describe(built))))
    assert [sent(d) for d in rebuilt] == [sent(d) for d in built]
    by_name = {d.name: d for d in rebuilt}
    # the parts the UI and the scheduler rely on survive the trip
    assert by_name["housekeeping"].schedules and by_name["housekeeping"].schedules[0].schedule.interval
    assert by_name["judge-traffic"].concurrency_limit == 1
    assert by_name["optimize-prompt"]._parameter_openapi_schema.required == ["run_id"]


def test_runner_side_loads_no_flow_library():
    code = ("import json, sys\n"
            "from flows.served_deployments import collect, start_describing\n"
            "served = collect(start_describing())\n"
            "print(json.dumps({'names': [d.full_name for d in served], 'modules': sorted(sys.modules)}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["names"] == [d.full_name for d in deployments()]
    held = [m for m in result["modules"] if any(m == lib or m.startswith(lib + ".") for lib in FLOW_LIBRARIES)]
    assert held == []


def test_a_failed_description_stops_the_runner_with_its_exit_code():
    code = ("import flows.served_deployments as served\n"
            "def broken(out):\n"
            "    raise RuntimeError('a flow module failed to import')\n"
            "served.main = broken\n"
            "served.collect(served.start_describing())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "a flow module failed to import" in out.stderr  # the child's error, in the runner's log
    assert "describing the flows' deployments failed (exit code 1)" in out.stderr
