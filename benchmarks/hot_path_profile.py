"""Where a hot request's server CPU goes, in process: the app driven as ASGI in one event loop (no client, no
sockets, no granian), so `time.process_time` and cProfile see the server's work only.

    .venv/bin/python -m benchmarks.hot_path_profile                      # CPU per request of each hot endpoint
    .venv/bin/python -m benchmarks.hot_path_profile --profile out.prof --endpoint proxied   # and cProfile's split
    cd <another source tree> && /path/to/.venv/bin/python /path/to/benchmarks/hot_path_profile.py   # compare builds

Requests as benchmarks/hot_path.py sends them: modelSelect with its wrk script's words (10 candidates, a
~2,000-character prompt varied per request), `/v1/chat/completions` proxied (`openai/gpt-4o-mini`) and routed
(`switchboard`, 2 candidates) with its prompt, against the fake upstream in a process of its own (no delay;
benchmarks/gateway_overhead.py), whose CPU is not counted. 1,000 timed `GET /ready`, then for each endpoint 200
warm-up requests and 1,000 timed. modelSelect's candidates without figures start auto-onboarding, whose thread keeps
working while the next endpoints run (and whose flow run cannot start here: no Prefect): measure the gateway alone
with `--endpoint proxied --endpoint routed`.
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
import threading
import time

sys.path.insert(0, os.getcwd())
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["SWITCHBOARD_DATA_DIR"] = tempfile.mkdtemp(prefix="switchboard-bench-")
SELECT = "/v2/modelRouter/modelSelect"
GATEWAY = "/v1/chat/completions"


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


def threads_cpu_s() -> dict[str, float]:
    """CPU seconds of each live thread of this process by name (Linux: /proc, clock ticks), to tell the event loop's
    share from the background writers' (the call log, budget settlements, the access log's listener)."""
    tick, seconds = os.sysconf("SC_CLK_TCK"), {}
    for thread in threading.enumerate():
        try:
            fields = open(f"/proc/self/task/{thread.native_id}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = "event loop" if thread is threading.main_thread() else re.sub(r"[-_]?\d+(_\d+)?\Z", "", thread.name)
        seconds[name] = seconds.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return seconds


async def measure(upstream: str, endpoints: list[str], profile: str | None, profiled: str) -> None:
    os.environ.update({"SWITCHBOARD_LLM_API_BASE": upstream, "SWITCHBOARD_LLM_API_KEY": "sk-bench-0123456789"})
    # lazy: the environment above must be set before the project is imported
    import api
    from api.app import create_app
    from benchmarks.hot_path import PROMPT
    from benchmarks.routing_latency import CANDIDATES, LUA

    assert api.__file__.startswith(os.getcwd()), f"imported {api.__file__}, not this tree's api"
    words = re.findall(r'"(\w+)"', re.search(r"local words = \{(.*?)\}", LUA, re.S).group(1))
    providers = [{"provider": p, "model": m} for p, m in CANDIDATES]
    rng = random.Random(0)
    selects = [json.dumps({"llm_providers": providers, "cost_quality_tradeoff": rng.randint(0, 10), "messages": [
        {"role": "user", "content": " ".join(rng.choice(words) for _ in range(230))}]}).encode() for _ in range(1200)]
    proxied = json.dumps({"model": "openai/gpt-4o-mini", "messages": PROMPT}).encode()
    routed = json.dumps({"model": "switchboard", "messages": PROMPT,
                         "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"]}).encode()
    requests = {"modelSelect": (SELECT, selects), "proxied": (GATEWAY, [proxied] * 1200),
                "routed": (GATEWAY, [routed] * 1200)}
    app = create_app(publish_owner=False)
    figures: dict[str, float] = {}
    split: dict[str, dict[str, float]] = {}  # per endpoint: us a request in each thread
    async with app.lifespan():
        app.state.services.authenticator.rate_limiter = None
        key = app.state.services.store.accounts.issue_key("bench").key
        for _ in range(200):
            await call(app, "GET", "/ready", b"", key)
        began = time.process_time()
        for _ in range(1000):
            await call(app, "GET", "/ready", b"", key)
        figures["GET /ready"] = (time.process_time() - began) * 1000
        for name in endpoints:
            path, bodies = requests[name]
            for body in bodies[:200]:
                status = await call(app, "POST", path, body, key)
                assert status == 200, f"{name}: {status}"
            profiler = cProfile.Profile(time.thread_time) if profile and name == profiled else None  # CPU, not wall
            threads, began = threads_cpu_s(), time.process_time()
            if profiler:
                profiler.enable()
            for body in bodies[200:]:
                await call(app, "POST", path, body, key)
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile)
            figures[name] = (time.process_time() - began) * 1000
            split[name] = {thread: (cpu - threads.get(thread, 0.0)) * 1000 for thread, cpu in threads_cpu_s().items()}
    floor = figures["GET /ready"]
    print(f"{os.getcwd()}: server CPU per request, 1,000 each, load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}: " + ", ".join(
              f"{name} {us:.0f} us" + (f" ({us / floor:.1f}x)" if name != "GET /ready" else "")
              + (" under cProfile" if profile and name == profiled else "") for name, us in figures.items()))
    for name, threads in split.items():
        print(f"  {name} by thread (us a request, clock ticks): " + ", ".join(
            f"{thread} {us:.0f}" for thread, us in sorted(threads.items(), key=lambda kv: -kv[1]) if us >= 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", action="append", choices=["modelSelect", "proxied", "routed"],
                        help="measure only these (repeatable); all three by default")
    parser.add_argument("--profile", help="write cProfile's statistics of the first endpoint's requests here")
    args = parser.parse_args()
    from benchmarks.gateway_overhead import upstream_process  # lazy: after the environment above is set

    endpoints = args.endpoint or ["modelSelect", "proxied", "routed"]
    with upstream_process(0.0) as upstream:
        asyncio.run(measure(upstream, endpoints, args.profile, endpoints[0]))


if __name__ == "__main__":
    main()
