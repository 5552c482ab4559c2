"""Headless Chromium driven over the Chrome DevTools Protocol, for tests that must see what a browser sees (the
Prefect UI's login and deep links, tests/e2e/test_prefect_ui_login.py).

Debian's `chromium` package is the browser (nothing is downloaded at run time) and the `websockets` package that
Prefect already depends on is the client: one page, driven by `Runtime.evaluate`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


class Page:
    """One browser tab. `evaluate` runs JavaScript in it and returns the value; `wait_for` polls an expression."""

    def __init__(self, ws_url: str) -> None:
        self._ws = connect(ws_url, max_size=None, open_timeout=10)
        self._next_id = 0

    def call(self, method: str, **params: Any) -> dict:
        self._next_id += 1
        msg_id = self._next_id
        self._ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv(timeout=30))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll a JavaScript expression until it is truthy; its value, or TimeoutError with what the page shows."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError:  # the page is navigating
                value = None
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"{expression!r} still false after {timeout:.0f} s at {self.url()}: {self.text()[:600]!r}")

    def url(self) -> str:
        return self.evaluate("location.href")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def close(self) -> None:
        self._ws.close()


class Chromium:
    """A headless Chromium with a fresh profile (a fresh browser: empty localStorage, no cookies)."""

    def __init__(self, executable: str) -> None:
        self._profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self._process = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--remote-debugging-port=0",
             f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.port = self._debugging_port()

    def _debugging_port(self, timeout: float = 30.0) -> int:
        marker = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"chromium exited with code {self._process.returncode} at start")
            if marker.exists() and (lines := marker.read_text().split()):
                return int(lines[0])
            time.sleep(0.1)
        raise RuntimeError(f"chromium published no DevTools port within {timeout:.0f} s")

    def new_page(self) -> Page:
        target = httpx.put(f"http://127.0.0.1:{self.port}/json/new?about:blank", timeout=10).json()
        page = Page(target["webSocketDebuggerUrl"])
        page.call("Page.enable")
        page.call("Runtime.enable")
        return page

    def close(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)
