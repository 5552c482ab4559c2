"""`switchboard serve` with SWITCHBOARD_DATABASE_URL: PostgreSQL (the suite's own server, tests/support/postgres.py) is
the system of record, so serve starts no store owner and writes no DuckDB file; the API answers, the CLI connects
directly, and what was acknowledged is in PostgreSQL: the API, killed with -9 and restarted by the supervisor, reads
it back, and it is still there after Ctrl-C. One start (a whole second `serve` would double the test's time for
what PostgreSQL, not serve, keeps)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import httpx
import psycopg
import pytest

from tests.support.postgres import drop_database, new_database
from tests.support.service import BIN, Service, free_port, start_service

pytestmark = pytest.mark.e2e


def api_restarted(svc: Service, old_pid: int, timeout: float = 120) -> None:
    # The supervisor's restart ends when it says so (api/cli/restarts.py): the test then checks the restarted API,
    # not one half started, as tests/e2e/test_faults.py also waits for it.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = svc.parts().get("api")
        if pid is not None and pid != old_pid and "all running again" in "".join(svc.output):
            try:
                if httpx.get(f"{svc.api_url}/internal/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
        time.sleep(0.5)
    raise AssertionError("the API was not restarted:\n" + "".join(svc.output))


def test_serve_on_postgres_has_no_owner_and_keeps_acknowledged_writes(tmp_path, monkeypatch) -> None:
    url = new_database()
    monkeypatch.setenv("SWITCHBOARD_DATABASE_URL", url)  # start_service passes this process's environment on
    data = tmp_path / "data"
    try:
        svc = start_service(data, free_port(), free_port())
        try:
            assert svc.admin_key, "".join(svc.output)
            running = svc.parts()
            assert "store" not in running and {"prefect", "api", "runner"} <= set(running), running
            assert not (data / "run" / "owner.json").exists() and not (data / "switchboard.duckdb").exists()
            r = httpx.post(f"{svc.api_url}/v2/preferences/userPreferenceCreate", json={"name": "keep me"},
                           headers=svc.headers)
            assert r.status_code == 200, r.text
            pid = r.json()["preference_id"]
            out = subprocess.run([str(BIN / "switchboard"), "keys", "create", "--user", "cli-user"],
                                 env=svc.env, capture_output=True, text=True, timeout=60, check=True).stdout
            cli_key = out.strip().splitlines()[-1]

            os.kill(running["api"], signal.SIGKILL)
            api_restarted(svc, running["api"])
            r = httpx.put(f"{svc.api_url}/v2/preferences/userPreferenceUpdate", headers=svc.headers,
                          json={"preference_id": pid, "name": "still here"})
            assert r.status_code == 200 and r.json()["name"] == "still here", r.text
            r = httpx.post(f"{svc.api_url}/v2/preferences/userPreferenceCreate", json={},
                           headers={"Authorization": f"Bearer {cli_key}"})  # the CLI's key, from PostgreSQL
            assert r.status_code == 200, r.text
        finally:
            assert svc.stop(signal.SIGINT) == 0, "".join(svc.output)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT name FROM preferences WHERE preference_id = %s", [pid]).fetchone() == \
                ("still here",)
            assert conn.execute("SELECT count(*) FROM api_keys").fetchone() == (2,)
    finally:
        drop_database(url)
