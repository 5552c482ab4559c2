"""Prefect's scheduler, not a trigger from this code, starts the housekeeping deployment under `switchboard serve`.

With SQLAlchemy 2.1 the embedded server's scheduler failed on every loop and no scheduled run ever existed, while
every test that triggers a deployment by hand passed (docs/architecture.md, "Traps already found")."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.support.service import free_port, start_service

pytestmark = pytest.mark.e2e

INTERVAL_S = 5  # the housekeeping deployment's schedule here (600 s in the product)
WAIT_S = 150  # the scheduler's first pass over a new deployment comes within seconds; a busy machine is slow


def scheduled_runs(prefect_url: str, login: str, state: str) -> list[dict]:
    """The housekeeping deployment's flow runs in `state` that Prefect's scheduler created (tag `auto-scheduled`)."""
    body = {"deployments": {"name": {"any_": ["housekeeping"]}},
            "flow_runs": {"tags": {"all_": ["auto-scheduled"]}, "state": {"type": {"any_": [state]}}}, "limit": 20}
    r = httpx.post(f"{prefect_url}/flow_runs/filter", json=body, auth=tuple(login.split(":", 1)), timeout=10)
    r.raise_for_status()
    return r.json()


def test_the_scheduler_starts_housekeeping_on_its_interval(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SWITCHBOARD_HOUSEKEEPING_INTERVAL_S", str(INTERVAL_S))  # inherited by serve's runner
    service = start_service(tmp_path / "data", free_port(), free_port())
    try:
        deadline = time.monotonic() + WAIT_S
        completed: list[dict] = []
        while time.monotonic() < deadline and not completed:
            time.sleep(2)
            completed = scheduled_runs(service.prefect_url, service.prefect_login, "COMPLETED")
        waiting = scheduled_runs(service.prefect_url, service.prefect_login, "SCHEDULED")
        log = (tmp_path / "data" / "logs" / "prefect-server.log").read_text(errors="replace")
        scheduler_errors = [line for line in log.splitlines() if "Error" in line and "bulk" in line.lower()]
        assert completed, (f"no scheduled housekeeping run completed within {WAIT_S} s ({len(waiting)} waiting "
                           f"to run); scheduler errors: {scheduler_errors[:3]}")
        assert all(run["auto_scheduled"] and run["parameters"] == {} for run in completed)  # none started by hand
        assert not scheduler_errors
    finally:
        service.stop()
