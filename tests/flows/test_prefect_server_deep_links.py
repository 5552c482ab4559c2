"""The embedded Prefect server's fix for old-UI deep links (flows/prefect_server.py), over plain HTTP: a page load of
a deep link by a browser that chose no UI goes to the same page of the new UI (whose login keeps the path);
everything else reaches Prefect untouched. tests/e2e/test_prefect_ui_login.py drives a real browser through it."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from flows.prefect_server import DeepLinksToNewUi

RUN = "/runs/flow-run/66cd98d9-a7bc-4ed1-8264-455b8facf12c"
PAGE_LOAD = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
             "Sec-Fetch-Mode": "navigate"}


async def prefect_stand_in(scope, receive, send):
    """Answers what Prefect would have been asked, so a test sees whether the request reached it."""
    assert scope["type"] == "http"
    body = f"prefect saw {scope['method']} {scope['path']}".encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


def fetch(method: str, url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=DeepLinksToNewUi(prefect_stand_in))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:4200") as client:
            return await client.request(method, url, headers=headers)
    return asyncio.run(go())


@pytest.mark.parametrize("path", [RUN, "/runs/task-run/0f1e2d3c-0000-4000-8000-000000000001",
                                  "/flows/flow/0f1e2d3c-0000-4000-8000-000000000002",
                                  "/deployments/deployment/0f1e2d3c-0000-4000-8000-000000000003"])
def test_a_fresh_browser_opening_a_deep_link_goes_to_the_same_page_of_the_new_ui(path):
    reply = fetch("GET", path + "?tab=Logs", PAGE_LOAD)
    assert reply.status_code == 307
    assert reply.headers["location"] == f"/v2{path}?tab=Logs"
    assert reply.headers["cache-control"] == "no-store"  # a later choice of UI must be honoured


def test_an_accept_header_alone_marks_a_page_load():
    reply = fetch("HEAD", RUN, {"Accept": "text/html"})
    assert (reply.status_code, reply.headers["location"]) == (307, f"/v2{RUN}")


@pytest.mark.parametrize("cookie", ["prefect_ui_version=v1", "theme=dark; prefect_ui_version=v1"])
def test_a_browser_that_chose_the_old_ui_keeps_it(cookie):
    reply = fetch("GET", RUN, {**PAGE_LOAD, "Cookie": cookie})
    assert (reply.status_code, reply.text) == (200, f"prefect saw GET {RUN}")


def test_a_browser_that_chose_the_new_ui_is_sent_to_it():
    assert fetch("GET", RUN, {**PAGE_LOAD, "Cookie": "prefect_ui_version=v2"}).status_code == 307


@pytest.mark.parametrize(("method", "path", "headers"), [
    ("GET", RUN, {"Accept": "application/json"}),                          # a script's request, not a page load
    ("POST", RUN, PAGE_LOAD),                                              # not a read
    ("GET", "/", PAGE_LOAD),                                               # Prefect picks the UI for `/` itself
    ("GET", "/login", PAGE_LOAD),                                          # the old UI's own login page
    ("GET", "/dashboard", PAGE_LOAD),                                      # not an object's deep link
    ("GET", f"/v2{RUN}", PAGE_LOAD),                                       # already the new UI
    ("GET", "/api/flow_runs/66cd98d9-a7bc-4ed1-8264-455b8facf12c", PAGE_LOAD),  # the REST API
])
def test_everything_else_reaches_prefect_untouched(method, path, headers):
    reply = fetch(method, path, headers)
    assert (reply.status_code, reply.text) == (200, f"prefect saw {method} {path}")


def test_a_path_with_odd_characters_is_redirected_percent_encoded():
    reply = fetch("GET", "/runs/flow-run/a%20b%0D%0ALocation:x", PAGE_LOAD)
    assert reply.status_code == 307
    assert reply.headers["location"] == "/v2/runs/flow-run/a%20b%0D%0ALocation:x"
