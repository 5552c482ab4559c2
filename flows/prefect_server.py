"""The embedded Prefect server of `switchboard serve` (`python -m flows.prefect_server --host H --port P`): what
`prefect server start` runs (Prefect's app under uvicorn, services included), with one fix for its UI's deep links.

Why the fix: with a login (PREFECT_SERVER_API_AUTH_STRING, api/cli/supervisor.py) a fresh browser that opens a deep
link of the old (v1) UI, such as the `/runs/flow-run/<id>` that a flow run's "View at" line points to, gets a 401
from the run page's first API call, which that UI turns into "Page not found" at `/` with an "Oops. Something went
wrong." toast, racing its own redirect to the login page (Prefect 3.8.8). The new (v2) UI, which Prefect already
serves to browsers that chose no UI when they open `/`, sends an unauthenticated deep link to its login with the
path to return to, and lands on the run after the login. So a browser that has not chosen the old UI (its
`prefect_ui_version` cookie, set when one switches UI) is sent from an old-UI deep link to the same page in the
new UI, as `/` already is. The login itself is the UI's own: the password stays in the browser's localStorage, so
the server cannot tell a logged-in browser from a fresh one, and needs not: the new UI asks only when it must.
"""

from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

# The deep links Prefect builds for objects (prefect/utilities/urls.py, UI_URL_FORMATS) that both UIs route the
# same way under their own base.
DEEP_LINK_PREFIXES = ("/runs/flow-run/", "/runs/task-run/", "/flows/flow/", "/deployments/deployment/")
V2_BASE = "/v2"
UI_VERSION_COOKIE = "prefect_ui_version"  # prefect/server/api/server.py, UI_VERSION_COOKIE_NAME


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return ""


def _chose_old_ui(cookie_header: str) -> bool:
    for part in cookie_header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == UI_VERSION_COOKIE:
            return value.strip() == "v1"
    return False


def new_ui_location(scope: dict[str, Any]) -> str | None:
    """Where a browser's request for an old-UI deep link goes instead (None: leave it to Prefect)."""
    if scope.get("type") != "http" or scope.get("method") not in ("GET", "HEAD"):
        return None
    path = scope.get("path", "")
    if not path.startswith(DEEP_LINK_PREFIXES):
        return None
    # Only a page load: the UIs' own requests for scripts and data never ask for HTML.
    navigating = _header(scope, b"sec-fetch-mode") == "navigate" or "text/html" in _header(scope, b"accept").lower()
    if not navigating or _chose_old_ui(_header(scope, b"cookie")):
        return None
    query = scope.get("query_string", b"").decode("latin-1")
    return V2_BASE + quote(path, safe="/:@-._~!$&'()*+,;=") + (f"?{query}" if query else "")


class DeepLinksToNewUi:
    """ASGI middleware: a 307 from an old-UI deep link to the new UI's page for a browser without a UI choice."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        location = new_ui_location(scope)
        if location is None:
            await self.app(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 307,
                    "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0"),
                                (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": b""})


def create_app() -> Any:
    # lazy: building Prefect's server app imports all of it; tests of the redirect alone need none of that
    import prefect.settings
    from prefect.server.api.server import create_app as create_prefect_app

    app = create_prefect_app(final=True)
    if prefect.settings.PREFECT_UI_SERVE_BASE.value().strip("/"):  # a UI under another base: leave its paths alone
        return app
    return DeepLinksToNewUi(app)


def main(argv: list[str] | None = None) -> None:
    # lazy: the server's modules load only in the process that serves
    import prefect.settings
    import uvicorn

    parser = argparse.ArgumentParser(prog="python -m flows.prefect_server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    # The same server options as `prefect server start` (prefect/cli/_server_utils.py, _run_in_foreground).
    uvicorn.run(create_app(), host=args.host, port=args.port,
                timeout_keep_alive=prefect.settings.PREFECT_SERVER_API_KEEPALIVE_TIMEOUT.value(),
                ws_ping_interval=prefect.settings.PREFECT_SERVER_API_WEBSOCKET_PING_INTERVAL.value(),
                ws_ping_timeout=prefect.settings.PREFECT_SERVER_API_WEBSOCKET_PING_TIMEOUT.value(),
                log_level=prefect.settings.PREFECT_SERVER_LOGGING_LEVEL.value().lower())


if __name__ == "__main__":
    main()
