"""`switchboard serve` as an operator and a local attacker would try it: ready means ready, the Prefect UI works on
the configured port and Prefect's API wants its login, the data dir is private, and a supervisor killed with -9
leaves nothing running that would stop the next start."""

from __future__ import annotations

import os
import resource
import signal
import socket
import stat
import subprocess
import time

import httpx
import pytest

from tests.support.processes import alive
from tests.support.service import Service, free_port, start_service

pytestmark = pytest.mark.e2e


def test_ready_once_all_running_and_the_first_optimize_queues(service: Service) -> None:
    ready = httpx.get(f"{service.api_url}/ready", timeout=10)
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"] == {"store": "ok", "prefect": "ok", "deployments": "ok"}


def test_the_prefect_ui_names_its_own_port_and_the_api_wants_a_login(service: Service) -> None:
    ui = service.prefect_url.removesuffix("/api")
    settings = httpx.get(f"{ui}/ui-settings", timeout=10).json()
    assert settings["api_url"] == service.prefect_url  # a non-default port (free_port), not :4200
    assert settings["auth"] == "BASIC"
    assert httpx.get(f"{service.prefect_url}/deployments/name/housekeeping/housekeeping").status_code == 401
    user, password = service.prefect_login.split(":", 1)
    assert httpx.get(f"{service.prefect_url}/deployments/name/housekeeping/housekeeping",
                     auth=(user, password)).status_code == 200


def test_the_data_dir_is_private(service: Service) -> None:
    assert stat.S_IMODE(service.data_dir.stat().st_mode) == 0o700
    for path in (service.data_dir / "switchboard.duckdb", service.data_dir / "run" / "prefect-login",
                 service.data_dir / "run" / "owner.json"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    httpx.post(f"{service.api_url}/v2/modelRouter/modelSelect", headers=service.headers, timeout=30, json={
        "messages": "hi", "llm_providers": [{"provider": "openai", "model": "gpt-4o"}]})
    deadline = time.monotonic() + 10
    while not list((service.data_dir / "events").rglob("part-*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.2)
    parts = list((service.data_dir / "events").rglob("part-*.parquet"))
    assert parts and all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in parts)


def test_idle_connections_do_not_lock_ready_requests_out(service: Service) -> None:
    """1,100 sockets that send nothing used up granian's default connection cap (1,024 per worker): no key was
    needed to make GET /v2/models time out for everyone. `serve` gives granian a cap sized to its open files and a
    header timeout (api/cli/http_options.py); tests/api/test_hostile_connections.py checks the timeouts."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2_000:
        if hard != resource.RLIM_INFINITY and hard < 2_000:
            pytest.skip(f"the hard limit on open files ({hard}) is below the 2,000 this test needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (2_000, hard))
    host, port = service.api_url.removeprefix("http://").rsplit(":", 1)
    idle = [socket.create_connection((host, int(port)), timeout=30) for _ in range(1_100)]
    try:
        r = httpx.get(f"{service.api_url}/v2/models", headers=service.headers, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        for sock in idle:
            sock.close()


def processes_of(data_dir) -> list[str]:
    return subprocess.run(["pgrep", "-f", str(data_dir)], capture_output=True, text=True).stdout.split()


def test_kill_9_of_serve_leaves_no_process_and_the_next_start_works(tmp_path) -> None:
    data = tmp_path / "data"
    api_port, prefect_port = free_port(), free_port()
    first = start_service(data, api_port, prefect_port)
    parts = first.parts()
    assert set(parts) == {"prefect", "store", "api", "runner"}
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait()
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in parts.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [name for name, pid in parts.items() if alive(pid)], "children outlived their supervisor"

    second = start_service(data, api_port, prefect_port)
    try:
        r = httpx.post(f"{second.api_url}/v2/preferences/userPreferenceCreate", json={"name": "after kill -9"},
                       headers=first.headers, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        second.stop()
    assert processes_of(data) == []
