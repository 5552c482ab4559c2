"""The app's own CPU per request with metrics on and off: two copies of the app in this process, called through
ASGI directly (no server, no sockets), in alternating batches, timed with the calling thread's CPU clock (both
apps' background threads, session flushes and the log's writer, run whichever batch is timed, so process time
would mix them up). What wall-clock figures on a busy machine cannot resolve (a few percent), this can, roughly.
Run by benchmarks/metrics_overhead.py in an interpreter of its own (PROMETHEUS_MULTIPROC_DIR must be set before
prometheus_client loads, as under `serve`):

    PROMETHEUS_MULTIPROC_DIR=$(mktemp -d) .venv/bin/python -m benchmarks.metrics_overhead_app 40
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from typing import Any

from api.observability import hooks
from tests.support.fakes.openai_server import FakeOpenAI

PROMPT = [{"role": "user", "content": "What is the capital of Country007? " * 20}]
PATHS = {"modelSelect": ("/v2/modelRouter/modelSelect",
                         {"messages": PROMPT, "llm_providers": [{"provider": "openai", "model": "gpt-4o-mini"},
                                                                {"provider": "openai", "model": "gpt-4o"}]}),
         "gateway": ("/v1/chat/completions",
                     {"model": "switchboard", "messages": PROMPT,
                      "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"]})}
BATCH = 100


def app_with(metrics: bool) -> tuple[Any, str]:
    """An app on a data dir of its own, started, with a key."""
    # lazy: the environment (data dir, metrics switch) must be set before the settings are read
    from litestar.testing import TestClient

    from api.app import create_app
    from api.settings import reset_settings

    os.environ["SWITCHBOARD_DATA_DIR"] = tempfile.mkdtemp(prefix="switchboard-bench-")
    os.environ["SWITCHBOARD_METRICS"] = "1" if metrics else "0"
    reset_settings()
    client = TestClient(create_app(publish_owner=False))
    client.__enter__()  # the lifespan: services built; left running until the process ends
    return client.app, client.app.state.services.store.accounts.issue_key("bench").key


async def call(app: Any, key: str, path: str, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"authorization", f"Bearer {key}".encode()),
               (b"content-length", str(len(body)).encode()), (b"host", b"bench")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "headers": headers,
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000), "root_path": "", "state": {}}
    chunks = [{"type": "http.request", "body": body, "more_body": False}]
    status: list[int] = []

    async def receive() -> dict:
        if chunks:
            return chunks.pop()
        await asyncio.sleep(3600)  # no disconnect while the answer is sent
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    await app(scope, receive, send)
    assert status == [200], status


def main() -> None:
    batches = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    fake = FakeOpenAI().start()
    os.environ.update(SWITCHBOARD_LLM_API_BASE=fake.base_url, SWITCHBOARD_LLM_API_KEY="sk-bench-0123456789",
                      LITELLM_LOCAL_MODEL_COST_MAP="True")
    apps = {"on": app_with(True), "off": app_with(False)}
    loop = asyncio.new_event_loop()

    async def batch(app: Any, key: str, path: str, body: bytes, n: int) -> None:
        for _ in range(n):
            await call(app, key, path, body)

    for name, (path, payload) in PATHS.items():
        body = json.dumps(payload).encode()
        cpu = {"on": 0.0, "off": 0.0}
        for app, key in apps.values():  # warm-up
            loop.run_until_complete(batch(app, key, path, body, 20))
        for _ in range(batches):
            for switch, (app, key) in apps.items():
                hooks.state.metrics = switch == "on"  # served, one app per process sets it once (api/app.py)
                began = time.thread_time()
                loop.run_until_complete(batch(app, key, path, body, BATCH))
                cpu[switch] += time.thread_time() - began
        per = {s: cpu[s] / (batches * BATCH) * 1e6 for s in cpu}
        print(f"{name:<12} in process: {per['on']:7.1f} us CPU per request with metrics, {per['off']:7.1f} without; "
              f"on/off {cpu['on'] / cpu['off']:.3f} ({batches} x {BATCH} requests each)")
    fake.stop()
    os._exit(0)  # the apps' lifespans are left open on purpose: no shutdown to wait for


if __name__ == "__main__":
    main()
