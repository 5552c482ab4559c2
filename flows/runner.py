"""The flow runner: serves every deployment in flows.registry until stopped (`python -m flows.runner`).

This module imports nothing at its top on purpose. The runner starts each flow run in a fresh interpreter
(multiprocessing's spawn, prefect/flow_engine.py `run_flow_in_subprocess`), and a spawned interpreter first
re-imports the parent's main module, this one, as `__mp_main__`. With the registry imported up here every flow run
loaded every flow of the project (DSPy and LiteLLM for a router training, XGBoost and scikit-learn for a prompt
optimization) before its own: seconds of each run's start (docs/benchmarks.md, "Issue 20, item 4").
"""

from __future__ import annotations

import os

# Prefect's graceful shutdown pauses the deployments through the Prefect API; when `serve` died with its Prefect
# server that call retries for minutes, so a supervised runner whose supervisor is gone waits this long, then ends
# its process group (flow runs included).
ORPHAN_GRACE_S = 5.0


def main() -> None:
    # lazy: a flow run's interpreter imports this module again (see above); only the runner itself needs these
    from prefect import serve  # noqa: I001
    from api.parent_watch import SUPERVISOR_PID_ENV, exit_with_parent
    from flows.registry import deployments

    supervisor = os.environ.get(SUPERVISOR_PID_ENV)
    if supervisor and supervisor.isdigit() and int(supervisor) == os.getppid():
        exit_with_parent(int(supervisor), grace_s=ORPHAN_GRACE_S, whole_group=True)
    serve(*deployments(), limit=4)


if __name__ == "__main__":
    main()
