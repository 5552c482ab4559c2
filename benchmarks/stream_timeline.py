"""Where a streamed gateway call's first event waits, in process: the app driven as ASGI in one event loop (no
client socket, no granian) against the fake upstream in a process of its own, each step of one call stamped.

    .venv/bin/python -m benchmarks.stream_timeline            # 200 proxied and 200 routed streams, median stamps
    cd <another source tree> && /path/to/.venv/bin/python /path/to/benchmarks/stream_timeline.py   # another build

Stamps, from the ASGI call: the gateway's service called (Litestar's routing, middleware and body read before it),
the candidates decided (routed: modelSelect's decision), the upstream request sent (admission, budget, body and endpoint
before it), the upstream's response headers, its first `data:` event, the service's answer handed back, the ASGI
`http.response.start`, the relay's first yield and the first body sent. Then the bare upstream round trip from the
same process (aiohttp, no gateway), for scale. Issue 36; docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from typing import Any

sys.path.insert(0, os.getcwd())
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["SWITCHBOARD_DATA_DIR"] = tempfile.mkdtemp(prefix="switchboard-bench-")
os.environ["SWITCHBOARD_ONBOARD_AUTO"] = "false"
PROMPT = [{"role": "user", "content": "What is the capital of Country007? " * 20}]
STAMPS: dict[str, float] = {}


def stamp(name: str) -> None:
    STAMPS.setdefault(name, time.perf_counter())


async def call(app: Any, body: bytes, key: str) -> dict[str, float]:
    """One streamed request through the whole ASGI stack; its stamps in ms from the call."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions", "query_string": b"",
             "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                         (b"authorization", f"Bearer {key}".encode()), (b"content-length", str(len(body)).encode())]}
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # the client never disconnects
        return {}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            stamp("ASGI response start")
        elif message.get("body"):
            stamp("first body sent")

    STAMPS.clear()
    began = time.perf_counter()
    await app(scope, receive, send)
    return {name: (at - began) * 1000 for name, at in STAMPS.items()}


def instrument() -> None:
    """Stamps at the gateway's seams (wrapping its functions; nothing else changes)."""
    import api.gateway.service as service
    import api.gateway.upstream as upstream

    def around(owner: Any, name: str, before: str | None, after: str | None) -> None:
        inner = getattr(owner, name)

        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            if before:
                stamp(before)
            out = await inner(*args, **kwargs)
            if after:
                stamp(after)
            return out

        setattr(owner, name, wrapped)

    around(service.GatewayService, "complete", "gateway service called", "service answer handed back")
    around(service.GatewayService, "_call", "candidates decided", None)
    around(upstream.Upstream, "open", "upstream request sent", "upstream response headers")
    around(service, "first_data", None, "upstream first event")
    relay = service.relay

    async def relay_stamped(*args: Any, **kwargs: Any) -> AsyncIterator[bytes]:
        async for out in relay(*args, **kwargs):
            stamp("relay first yield")
            yield out

    service.relay = relay_stamped


async def bare_round_trip(base: str, n: int) -> float:
    """Median ms from sending a streamed request to its response headers, aiohttp alone, same process."""
    import aiohttp
    import numpy as np

    body = json.dumps({"model": "gpt-4o-mini", "messages": PROMPT, "stream": True}).encode()
    took = []
    async with aiohttp.ClientSession() as session:
        for i in range(n + 20):
            began = time.perf_counter()
            response = await session.post(f"{base}/chat/completions", data=body,
                                          headers={"content-type": "application/json"})
            if i >= 20:
                took.append((time.perf_counter() - began) * 1000)
            await response.read()
    return float(np.median(took))


async def measure(base: str, n: int) -> None:
    import numpy as np

    import api
    from api.app import create_app

    assert api.__file__.startswith(os.getcwd()), f"imported {api.__file__}, not this tree's api"
    instrument()
    app = create_app(publish_owner=False)
    async with app.lifespan():
        app.state.services.authenticator.rate_limiter = None
        key = app.state.services.store.accounts.issue_key("bench").key
        print(f"{os.getcwd()}: stamps of a streamed call, median ms from the ASGI call ({n} calls each, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
        for mode, fields in (("proxied", {"model": "openai/gpt-4o-mini"}),
                             ("routed", {"model": "switchboard", "llm_providers": ["openai/gpt-4o-mini",
                                                                                   "openai/gpt-4o"]})):
            body = json.dumps({**fields, "messages": PROMPT, "stream": True}).encode()
            for _ in range(20):  # warm-up: the pooled connection, the router's first decisions
                await call(app, body, key)
            rows = [await call(app, body, key) for _ in range(n)]
            print(mode)
            for name in rows[0]:
                print(f"  {name:28} {np.median([row[name] for row in rows if name in row]):7.3f}")
        print(f"bare aiohttp round trip to the upstream's headers: {await bare_round_trip(base, n):.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    from benchmarks.gateway_overhead import upstream_process

    with upstream_process(0.0) as base:
        os.environ.update({"SWITCHBOARD_LLM_API_BASE": base, "SWITCHBOARD_LLM_API_KEY": "sk-bench-0123456789"})
        asyncio.run(measure(base, args.calls))


if __name__ == "__main__":
    main()
