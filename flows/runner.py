"""The flow runner: serves every deployment in flows.registry until stopped (`python -m flows.runner`).

`switchboard serve` starts it beside the Prefect server (api/cli/supervisor.py): a short-lived forked child describes
the flows' deployments meanwhile (flows/served_deployments.py: the runner itself never imports a flow, so an idle
runner holds Prefect and no flow's libraries), then it waits until the server answers before it touches Prefect's
API.

Each flow run executes in a fresh interpreter, `python -m prefect.engine`, which imports its flow from the entrypoint
stored with its deployment (the runner holds no flow object to hand it). This module still imports nothing heavy at
its top: an interpreter that re-imports the runner's main module (multiprocessing's spawn) would otherwise load
every flow's libraries before its own, seconds of each start (docs/benchmarks.md, "Issue 20, item 4").
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

# Prefect's graceful shutdown pauses the deployments through the Prefect API; when `serve` died with its Prefect
# server that call retries for minutes, so a supervised runner whose supervisor is gone waits this long, then ends
# its process group (flow runs included).
ORPHAN_GRACE_S = 5.0
PREFECT_WAIT_S = 180.0


def wait_for_prefect(api_url: str, auth_string: str | None, timeout: float = PREFECT_WAIT_S) -> None:
    # lazy: a flow run's interpreter imports this module again (see above); only the runner itself needs these
    import httpx  # noqa: I001
    from api.settings import basic_auth

    auth = basic_auth(auth_string)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{api_url.rstrip('/')}/health", timeout=2.0, auth=auth).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"the Prefect server at {api_url} did not answer within {timeout:.0f} s")
        time.sleep(0.3)


def settle_orphans(api_url: str, auth_string: str | None) -> None:
    """No runner of this Prefect server is alive now, so a flow run still Running/Pending is an orphan."""
    # lazy: as above, only the runner itself settles orphans
    from flows.prefect_api import HOUSEKEEPING, ORPHAN_REASON, settle_orphaned_runs

    try:
        crashed = asyncio.run(settle_orphaned_runs(api_url, ORPHAN_REASON, HOUSEKEEPING, auth_string=auth_string))
    except Exception as exc:  # never a reason not to start; housekeeping reconciles later
        print(f"could not check for flow runs left behind by a stopped runner: {type(exc).__name__}: {exc}",
              file=sys.stderr, flush=True)
        return
    if crashed:
        print(f"{len(crashed)} flow run(s) left running by a stopped runner marked crashed; housekeeping queued",
              flush=True)


def main() -> None:
    # lazy: a flow run's interpreter imports this module again (see above); only the runner itself needs these
    from prefect import serve  # noqa: I001
    from api.parent_watch import SUPERVISOR_PID_ENV, exit_with_parent
    from api.settings import get_settings
    from flows.prefect_api import SETTLE_ORPHANS_ENV
    from flows.served_deployments import collect, start_describing

    describing = start_describing()  # forked before any thread starts; it imports the flows while Prefect starts

    supervisor = os.environ.get(SUPERVISOR_PID_ENV)
    if supervisor and supervisor.isdigit() and int(supervisor) == os.getppid():
        exit_with_parent(int(supervisor), grace_s=ORPHAN_GRACE_S, whole_group=True)
    settings = get_settings()
    api_url, auth_string = settings.prefect_api_url, settings.prefect_auth_string
    if api_url:
        wait_for_prefect(api_url, auth_string)
        if os.environ.get(SETTLE_ORPHANS_ENV) == "1":
            settle_orphans(api_url, auth_string)
    serve(*collect(describing), limit=4)


if __name__ == "__main__":
    main()
