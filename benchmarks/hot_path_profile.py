"""Where a modelSelect's server CPU goes, in process: the app driven as ASGI in one event loop (no client, no
sockets, no granian), so `time.process_time` and cProfile see the server's work only.

    .venv/bin/python -m benchmarks.hot_path_profile                      # CPU per request, /ready and modelSelect
    .venv/bin/python -m benchmarks.hot_path_profile --profile out.prof   # and cProfile's split of modelSelect
    cd <another source tree> && /path/to/.venv/bin/python /path/to/benchmarks/hot_path_profile.py   # compare builds

Requests as benchmarks/hot_path.py sends them (its wrk script's words, 10 candidates, a ~2,000-character prompt
varied per request): 200 warm-up, then 1,000 timed, after 1,000 timed `GET /ready`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import random
import re
import sys
import tempfile
import time

sys.path.insert(0, os.getcwd())
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["SWITCHBOARD_DATA_DIR"] = tempfile.mkdtemp(prefix="switchboard-bench-")
SELECT = "/v2/modelRouter/modelSelect"


async def call(app, method: str, path: str, body: bytes, key: str) -> int:
    """One request through the whole ASGI stack (middleware included); its status."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                         (b"authorization", f"Bearer {key}".encode()), (b"content-length", str(len(body)).encode())]}
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    statuses: list[int] = []

    async def receive() -> dict:
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # the client never disconnects
        return {}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await app(scope, receive, send)
    return statuses[0]


async def measure(profile: str | None) -> None:
    # lazy: the environment above must be set before the project is imported
    import api
    from api.app import create_app
    from benchmarks.routing_latency import CANDIDATES, LUA

    assert api.__file__.startswith(os.getcwd()), f"imported {api.__file__}, not this tree's api"
    words = re.findall(r'"(\w+)"', re.search(r"local words = \{(.*?)\}", LUA, re.S).group(1))
    providers = [{"provider": p, "model": m} for p, m in CANDIDATES]
    rng = random.Random(0)
    bodies = [json.dumps({"llm_providers": providers, "cost_quality_tradeoff": rng.randint(0, 10), "messages": [
        {"role": "user", "content": " ".join(rng.choice(words) for _ in range(230))}]}).encode() for _ in range(1200)]
    app = create_app(publish_owner=False)
    async with app.lifespan():
        app.state.services.authenticator.rate_limiter = None
        key = app.state.services.store.accounts.issue_key("bench").key
        for body in bodies[:200]:
            assert await call(app, "POST", SELECT, body, key) == 200
        began = time.process_time()
        for _ in range(1000):
            await call(app, "GET", "/ready", b"", key)
        ready_us = (time.process_time() - began) * 1000
        profiler = cProfile.Profile() if profile else None
        began = time.process_time()
        if profiler:
            profiler.enable()
        for body in bodies[200:]:
            await call(app, "POST", SELECT, body, key)
        if profiler:
            profiler.disable()
            profiler.dump_stats(profile)
        select_us = (time.process_time() - began) * 1000
    print(f"{os.getcwd()}: server CPU per request, 1,000 each: GET /ready {ready_us:.0f} us, modelSelect "
          f"{select_us:.0f} us{' (under cProfile)' if profile else ''}, {select_us / ready_us:.1f}x; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", help="write cProfile's statistics of the modelSelect requests here")
    asyncio.run(measure(parser.parse_args().profile))


if __name__ == "__main__":
    main()
