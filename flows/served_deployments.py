"""The embedded runner's deployments as data, so that the runner holds no flow in memory.

A deployment needs its flow only to be described: its name, entrypoint, version (the flow file's hash) and the
parameter schema the Prefect UI draws its run form from. The runner never executes a flow in its own process: a
served deployment registered with `serve(*deployments)` has no flow object in the runner's registry (prefect
3.8.8, prefect/runner/runner.py `_run_process`), so each run starts `python -m prefect.engine`, which imports the
flow from the entrypoint stored with the deployment. Yet importing every flow module to describe them kept every
flow's libraries (DSPy, LiteLLM, pandas, scikit-learn, numpy, the API's modules) resident in the runner for the
service's life: about 120 MiB of an idle `serve` (docs/benchmarks.md, "Issue 36, idle memory of serve").

So the runner asks a short-lived interpreter for the descriptions (`python -m flows.served_deployments` prints
them as JSON, built by flows.registry as before) and rebuilds the same RunnerDeployment objects from them, with the
same fields set and the same private parts Prefect sends when it applies them (prefect/deployments/runner.py:
`_create` and `_update` send `_path`, `_parameter_openapi_schema` and the fields set).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from typing import Any

FIELDS, PATH, ENTRYPOINT_TYPE, SCHEMA, VERSION_FROM_FLOW = (
    "fields", "path", "entrypoint_type", "parameter_schema", "version_from_flow")


def describe(deployments: list[Any]) -> list[dict[str, Any]]:
    """Everything `apply()` sends for each deployment, as JSON-ready data."""
    return [{FIELDS: deployment.model_dump(mode="json", exclude_unset=True),
             PATH: deployment._path,
             ENTRYPOINT_TYPE: deployment.entrypoint_type.value,
             SCHEMA: deployment._parameter_openapi_schema.model_dump(mode="json", exclude_unset=True),
             VERSION_FROM_FLOW: deployment._version_from_flow}
            for deployment in deployments]


def rebuild(described: list[dict[str, Any]]) -> list[Any]:
    """The RunnerDeployments `describe` was given, without their flows."""
    # lazy: the runner imports this module only inside its main (a flow run re-imports the runner's main module)
    from prefect.deployments.runner import EntrypointType, RunnerDeployment  # noqa: I001
    from prefect.utilities.callables import ParameterSchema

    rebuilt = []
    for spec in described:
        deployment = RunnerDeployment(**spec[FIELDS])  # the same fields set: `_update` sends only those
        deployment._path = spec[PATH]
        deployment._entrypoint_type = EntrypointType(spec[ENTRYPOINT_TYPE])
        deployment._parameter_openapi_schema = ParameterSchema(**spec[SCHEMA])
        deployment._version_from_flow = spec[VERSION_FROM_FLOW]
        rebuilt.append(deployment)
    return rebuilt


def start_describing() -> subprocess.Popen:
    """Describe the deployments in another interpreter (it imports every flow), started now so that it works while
    the runner waits for the Prefect server; its errors go to the runner's log."""
    return subprocess.Popen([sys.executable, "-m", "flows.served_deployments"], stdout=subprocess.PIPE)


def collect(describing: subprocess.Popen) -> list[Any]:
    out, _ = describing.communicate()
    if describing.returncode:
        raise SystemExit(f"describing the flows' deployments failed (exit code {describing.returncode}); "
                         "the error is above")
    return rebuild(json.loads(out))


def main() -> None:
    # lazy: only this short-lived interpreter imports the flows
    from flows.registry import deployments

    with contextlib.redirect_stdout(sys.stderr):  # whatever a library prints at import stays out of the JSON
        described = describe(deployments())
    json.dump(described, sys.stdout)


if __name__ == "__main__":
    main()
