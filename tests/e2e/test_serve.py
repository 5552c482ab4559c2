"""End to end through the real server, the real Prefect and the official `notdiamond` client."""

from __future__ import annotations

import asyncio
import signal
import subprocess

import httpx
import pytest
from notdiamond import NotDiamond, NotFoundError

from tests.support.service import BIN, Service, free_port, start_service

pytestmark = pytest.mark.e2e


def test_first_start_prints_an_admin_key_once(service: Service) -> None:
    assert service.admin_key, "".join(service.output)
    assert sum(service.admin_key in line for line in service.output) == 1
    r = httpx.post(f"{service.api_url}/v2/preferences/userPreferenceCreate", json={},
                   headers={"Authorization": f"Bearer {service.admin_key}"})
    assert r.status_code == 200, r.text


def test_official_client_models_and_preferences(service: Service) -> None:
    client = NotDiamond(api_key=service.admin_key, base_url=service.api_url, max_retries=0)
    listed = client.models.list(provider=["openai", "anthropic"], openrouter_only=True)
    assert listed.total == len(listed.models) >= 10
    assert {m.provider for m in listed.models} == {"openai", "anthropic"}
    assert all(m.openrouter_model for m in listed.models)
    everything = client.models.list()
    assert everything.total >= 150 and everything.total > listed.total

    created = client.preferences.create(name="e2e preference")
    client.preferences.update(preference_id=created.preference_id, name="renamed")
    client.preferences.delete(created.preference_id)
    with pytest.raises(NotFoundError):
        client.preferences.delete(created.preference_id)


def test_cli_talks_to_the_running_owner(service: Service) -> None:
    # The API owns the DuckDB file; the CLI must go through it instead of failing on the lock.
    out = subprocess.run([str(BIN / "switchboard"), "keys", "create", "--user", "cli-user"], env=service.env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    key = out.strip().splitlines()[-1]
    r = httpx.post(f"{service.api_url}/v2/preferences/userPreferenceCreate", json={"name": "x"},
                   headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200


def test_housekeeping_deployment_runs_on_the_runner(service: Service) -> None:
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    async def run() -> str:
        flow_run = await run_deployment("housekeeping/housekeeping", timeout=90, poll_interval=1)
        async with get_client() as client:
            return (await client.read_flow_run(flow_run.id)).state.type.value

    # Prefect reads its settings at import; temporary_settings points this process at the service's server.
    with temporary_settings({PREFECT_API_URL: service.prefect_url, PREFECT_API_AUTH_STRING: service.prefect_login}):
        assert asyncio.run(run()) == "COMPLETED"


def test_ctrl_c_stops_everything_and_restart_keeps_data(tmp_path) -> None:
    data = tmp_path / "data"
    api_port, prefect_port = free_port(), free_port()
    first = start_service(data, api_port, prefect_port)
    headers = {"Authorization": f"Bearer {first.admin_key}"}
    pid = httpx.post(f"{first.api_url}/v2/preferences/userPreferenceCreate", json={"name": "keep me"},
                     headers=headers).json()["preference_id"]
    assert first.stop(signal.SIGINT) == 0
    assert "stopped" in "".join(first.output)
    leftovers = subprocess.run(["pgrep", "-f", str(data)], capture_output=True, text=True).stdout.split()
    assert leftovers == [], f"processes still running for {data}: {leftovers}"
    assert not (data / "run" / "owner.json").exists()

    second = start_service(data, api_port, prefect_port)
    try:
        assert second.admin_key is None  # printed once, on first start only
        r = httpx.put(f"{second.api_url}/v2/preferences/userPreferenceUpdate", headers=headers,
                      json={"preference_id": pid, "name": "still here"})
        assert r.status_code == 200 and r.json()["name"] == "still here"
    finally:
        second.stop()
