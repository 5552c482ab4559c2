"""GET /ready: 200 only when the store answers and Prefect has the deployments the API triggers; otherwise 503
naming what is not ready, so a probe or a person knows what is still starting."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from api.readiness import TRIGGERED_DEPLOYMENTS, Readiness

LOGIN = "switchboard:secret"


class FakePrefect:
    """Prefect's /health and /deployments/name/... behind basic auth, with the deployments registered so far."""

    def __init__(self) -> None:
        self.registered: set[str] = set()
        self.health_checks = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = self.path.removeprefix("/api")
                authorised = self.headers.get("Authorization") == "Basic " + base64.b64encode(LOGIN.encode()).decode()
                if path == "/health":
                    fake.health_checks += 1
                    status = 200
                elif not authorised:
                    status = 401
                else:
                    status = 200 if path.removeprefix("/deployments/name/") in fake.registered else 404
                body = json.dumps({}).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/api"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def prefect() -> Iterator[FakePrefect]:
    fake = FakePrefect()
    yield fake
    fake.server.shutdown()


def readiness_of(client, prefect_url: str | None) -> Readiness:
    services = client.app.state.services
    services.readiness = Readiness(services.store, prefect_url, LOGIN)
    return services.readiness


def test_without_prefect_the_api_is_not_ready_and_says_why(client):
    readiness_of(client, None)
    response = client.get("/ready")
    assert response.status_code == 503 and response.headers["Retry-After"] == "2"
    assert response.json()["checks"]["store"] == "ok"
    assert "no Prefect server" in response.json()["checks"]["prefect"]


def test_ready_once_the_deployments_are_registered(client, prefect):
    readiness = readiness_of(client, prefect.url)
    starting = client.get("/ready").json()
    assert starting["status"] == "starting" and "not registered yet" in starting["checks"]["deployments"]
    prefect.registered.update(TRIGGERED_DEPLOYMENTS)
    readiness._last = (0.0, {})  # past the probe cache
    response = client.get("/ready")
    assert response.status_code == 200 and response.json() == {
        "status": "ready", "checks": {"store": "ok", "prefect": "ok", "deployments": "ok"}}


def test_an_unreachable_prefect_is_named(client, prefect):
    url = prefect.url
    prefect.server.shutdown()
    prefect.server.server_close()
    readiness_of(client, url)
    assert "does not answer" in client.get("/ready").json()["checks"]["prefect"]


def test_concurrent_callers_share_one_check(client, prefect):
    """Once the cache has expired, many probes at once make one round of Prefect calls, not one each: the first
    callers wait for that check, later ones get the previous answer while it runs."""
    readiness = readiness_of(client, prefect.url)
    prefect.registered.update(TRIGGERED_DEPLOYMENTS)

    async def probes(n: int) -> list[dict[str, str]]:
        return await asyncio.gather(*(readiness.checks() for _ in range(n)))

    first = asyncio.run(probes(8))  # nothing cached yet: all wait for the one check
    assert prefect.health_checks == 1
    assert all(answer == {"store": "ok", "prefect": "ok", "deployments": "ok"} for answer in first)

    prefect.registered.clear()
    readiness._last = (0.0, readiness._last[1])  # expired, but an answer is there
    again = asyncio.run(probes(8))
    assert prefect.health_checks == 2
    assert again[0]["deployments"].startswith("not registered yet")  # the caller that made the check sees it
    assert all(answer["deployments"] == "ok" for answer in again[1:])  # the others, the previous answer
    assert readiness._last[1]["deployments"].startswith("not registered yet")
