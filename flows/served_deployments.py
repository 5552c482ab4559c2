"""The embedded runner's deployments as data, so that the runner holds no flow in memory.

A deployment needs its flow only to be described: its name, entrypoint, version (the flow file's hash) and the
parameter schema the Prefect UI draws its run form from. The runner never executes a flow in its own process: a
served deployment registered with `serve(*deployments)` has no flow object in the runner's registry (prefect
3.8.8, prefect/runner/runner.py `_run_process`), so each run starts `python -m prefect.engine`, which imports the
flow from the entrypoint stored with the deployment. Yet importing every flow module to describe them kept every
flow's libraries (DSPy, LiteLLM, pandas, scikit-learn, numpy, the API's modules) resident in the runner for the
service's life: about 120 MiB of an idle `serve` (docs/benchmarks.md, "Issue 36, idle memory of serve").

So the runner has a short-lived forked child describe them as JSON (built by flows.registry as before; `python -m
flows.served_deployments` prints the same) and rebuilds the same RunnerDeployment objects from them, with the
same fields set and the same private parts Prefect sends when it applies them (prefect/deployments/runner.py:
`_create` and `_update` send `_path`, `_parameter_openapi_schema` and the fields set).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from dataclasses import dataclass
from typing import Any, TextIO

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


@dataclass(frozen=True)
class Describing:
    pid: int
    read_fd: int


def start_describing() -> Describing:
    """Describe the deployments in a forked child (it imports every flow), started now so that it works while the
    runner waits for the Prefect server. Forked, not a fresh interpreter: the child shares the Prefect the runner
    has just imported instead of importing it a second time beside the starting Prefect server (on two cores that
    slowed the server's start, the critical path, by about 2 s). The runner must have no thread running yet."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write the description and end, without the parent's exit handlers
        os.close(read_fd)
        code = 0
        try:
            with os.fdopen(write_fd, "w") as out:
                main(out)
        except BaseException:  # its error goes to the runner's log; the runner reports the exit code
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write_fd)
    return Describing(pid, read_fd)


def collect(describing: Describing) -> list[Any]:
    with os.fdopen(describing.read_fd) as described:
        text = described.read()
    code = os.waitstatus_to_exitcode(os.waitpid(describing.pid, 0)[1])
    if code:
        raise SystemExit(f"describing the flows' deployments failed (exit code {code}); the error is above")
    return rebuild(json.loads(text))


def main(out: TextIO = sys.stdout) -> None:
    # lazy: only the describing process imports the flows
    from flows.registry import deployments

    with contextlib.redirect_stdout(sys.stderr):  # whatever a library prints at import stays out of the JSON
        described = describe(deployments())
    json.dump(described, out)


if __name__ == "__main__":
    main()
