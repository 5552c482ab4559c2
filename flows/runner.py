"""The flow runner: serves every deployment in flows.registry until stopped (`python -m flows.runner`)."""

from __future__ import annotations

import os

from prefect import serve

from api.parent_watch import SUPERVISOR_PID_ENV, exit_with_parent
from flows.registry import deployments

# Prefect's graceful shutdown pauses the deployments through the Prefect API; when `serve` died with its Prefect
# server that call retries for minutes, so a supervised runner whose supervisor is gone waits this long, then ends
# its process group (flow runs included).
ORPHAN_GRACE_S = 5.0


def main() -> None:
    supervisor = os.environ.get(SUPERVISOR_PID_ENV)
    if supervisor and supervisor.isdigit() and int(supervisor) == os.getppid():
        exit_with_parent(int(supervisor), grace_s=ORPHAN_GRACE_S, whole_group=True)
    serve(*deployments(), limit=4)


if __name__ == "__main__":
    main()
