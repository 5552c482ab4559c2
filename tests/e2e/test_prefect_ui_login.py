"""A fresh browser opening a flow run's deep link on the embedded Prefect server (what a flow run's "View at" line
points to) reaches the login, and after it the run: headless Chromium (Debian's package, `make test` installs it)
against `python -m flows.prefect_server` with a login, as `switchboard serve` starts it (api/cli/supervisor.py).
Skipped, saying why, where no Chromium is installed; tests/flows/test_prefect_server_deep_links.py checks the
redirect over plain HTTP everywhere."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from api.cli.supervisor import prefect_env
from tests.support.chromium import Chromium, find_chromium
from tests.support.service import free_port

pytestmark = pytest.mark.e2e
LOGIN = "switchboard:e2e-ui-login-secret"
RUN_NAME = "deep-link-target"


@dataclass
class PrefectServer:
    url: str
    flow_run_id: str


def _create_flow_run(api_url: str) -> str:
    from prefect import flow
    from prefect.client.orchestration import PrefectClient

    @flow(name="ui-deep-link")
    def target() -> None:
        pass

    async def create() -> str:
        async with PrefectClient(api_url, auth_string=LOGIN) as client:
            return str((await client.create_flow_run(target, name=RUN_NAME)).id)
    return asyncio.run(create())


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectServer]:
    home = tmp_path_factory.mktemp("prefect-ui")
    port = free_port()
    env = dict(os.environ, PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", **prefect_env(port, LOGIN))
    env.pop("PREFECT_API_URL", None)
    log = open(home / "server.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "flows.prefect_server", "--host", "127.0.0.1", "--port",
                                str(port)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, (home / "server.log").read_text()[-2000:]
            try:
                if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the Prefect server did not start within 120 s"
            time.sleep(0.5)
        yield PrefectServer(base, _create_flow_run(f"{base}/api"))
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_the_api_refuses_a_client_without_the_login(prefect_server: PrefectServer):
    assert httpx.get(f"{prefect_server.url}/api/flow_runs/{prefect_server.flow_run_id}").status_code == 401


def test_a_deep_link_page_load_goes_to_the_new_ui_over_plain_http(prefect_server: PrefectServer):
    link = f"{prefect_server.url}/runs/flow-run/{prefect_server.flow_run_id}"
    reply = httpx.get(link, headers={"Accept": "text/html"})
    assert (reply.status_code, reply.headers["location"]) == (307, f"/v2/runs/flow-run/{prefect_server.flow_run_id}")
    new_ui = httpx.get(prefect_server.url + reply.headers["location"], headers={"Accept": "text/html"})
    assert new_ui.status_code == 200 and "<html" in new_ui.text.lower()
    settings = httpx.get(f"{prefect_server.url}/ui-settings").json()  # what tells the UI to ask for the login
    assert settings["auth"] == "BASIC" and "v2" in settings["available_uis"]


def _log_in(page, password: str) -> None:
    page.wait_for("document.querySelector('input[type=password]') !== null")
    page.evaluate("document.querySelector('input[type=password]').focus()")
    page.call("Input.insertText", text=password)  # typed, as a person would (the form reads input events)
    page.evaluate("document.querySelector('input[type=password]').form.requestSubmit()")


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (`make test` installs Debian's chromium "
                                                    "as root; elsewhere: apt-get install chromium)")
def test_a_fresh_browser_reaches_the_login_and_then_the_run(prefect_server: PrefectServer):
    browser = Chromium(find_chromium())  # a fresh profile: nothing in localStorage, no cookies
    page = browser.new_page()
    try:
        run_id = prefect_server.flow_run_id
        page.goto(f"{prefect_server.url}/runs/flow-run/{run_id}")
        page.wait_for("location.pathname.endsWith('/login') && !!document.querySelector('input[type=password]')")
        back = json.dumps(run_id)
        assert page.evaluate(f"decodeURIComponent(location.search).includes({back})"), page.url()
        shown = page.text()
        assert "Login" in shown and "Oops" not in shown and "not found" not in shown.lower(), shown

        _log_in(page, LOGIN)
        page.wait_for(f"location.pathname.endsWith('/runs/flow-run/' + {back})")
        page.wait_for(f"document.body.innerText.includes({json.dumps(RUN_NAME)})")
        shown = page.text()
        assert "Oops" not in shown and "Login" not in shown.split("\n")[:3], shown
    finally:
        page.close()
        browser.close()


@pytest.mark.skipif(find_chromium() is None, reason="no Chromium installed (`make test` installs Debian's chromium "
                                                    "as root; elsewhere: apt-get install chromium)")
def test_a_wrong_password_stays_on_the_login(prefect_server: PrefectServer):
    browser = Chromium(find_chromium())
    page = browser.new_page()
    try:
        page.goto(f"{prefect_server.url}/runs/flow-run/{prefect_server.flow_run_id}")
        _log_in(page, "switchboard:not-the-password")
        page.wait_for("/Invalid credentials|Authentication failed/.test(document.body.innerText)")  # the UI's answer
        assert page.evaluate("location.pathname.endsWith('/login') && !!document.querySelector('input[type=password]')")
        assert RUN_NAME not in page.text()
    finally:
        page.close()
        browser.close()

