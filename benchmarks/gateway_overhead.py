"""What the OpenAI-compatible gateway adds to a call, measured side by side in one run.

    .venv/bin/python -m benchmarks.gateway_overhead                 # 8 clients, 20 ms upstream, 3 rounds
    .venv/bin/python -m benchmarks.gateway_overhead --requests 300 --delay-ms 20

A local OpenAI-compatible upstream (tests/support/fakes/openai_server.py, keep-alive, a fixed delay per answer)
and the real API (granian, one worker, tests/support/service.py) pointed at it. 8 client threads (httpx, one
keep-alive connection each) send chat completions; each round runs every path in turn, so the paths share the
machine's load:
- direct: the upstream itself (the baseline);
- proxy: `/v1/chat/completions` with model `openai/gpt-4o-mini` (no routing: parse, call, relay, record);
- routed: model `switchboard` with two candidates (modelSelect's decision, then the same);
- ttft: streaming, time to the first event, direct and routed.
Prints p50/p99 latency per path and what the gateway adds (its p50/p99 less direct's). Targets (issue 22): p50
<= 5 ms, p99 <= 15 ms added. On a machine shared with other work the wall-clock figures move with its load, so it
also prints the server's CPU time per request on each path (one client, requests in sequence), beside
`GET /ready` (the floor: the same server and framework, no work) and modelSelect with the same candidates.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from multiprocessing.connection import Connection
from typing import TypeVar

import httpx
import numpy as np

from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import running_api

T = TypeVar("T")

PROMPT = [{"role": "user", "content": "What is the capital of Country007? " * 20}]


def call(client: httpx.Client, url: str, body: dict, headers: dict, stream: bool) -> float:
    """Seconds to the whole answer, or to the first event when streaming."""
    began = time.perf_counter()
    if not stream:
        response = client.post(url, json=body, headers=headers)
        assert response.status_code == 200, response.text
        return time.perf_counter() - began
    with client.stream("POST", url, json={**body, "stream": True}, headers=headers) as response:
        assert response.status_code == 200, response.read()
        took = None
        for line in response.iter_lines():  # read to the end, as a caller would
            if took is None and line.startswith("data:"):
                took = time.perf_counter() - began
    assert took is not None
    return took


def concurrently(clients: int, per_client: int, call_one: Callable[[httpx.Client], T]) -> list[T]:
    """`clients` threads, each with its own keep-alive client, each calling `call_one` `per_client` times."""
    results: list[T] = []
    lock = threading.Lock()

    def worker() -> None:
        with httpx.Client(timeout=30) as client:
            mine = [call_one(client) for _ in range(per_client)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def run(url: str, body: dict, headers: dict, clients: int, per_client: int, stream: bool = False) -> np.ndarray:
    return np.array(concurrently(clients, per_client, lambda c: call(c, url, body, headers, stream))) * 1000


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of the API process and its children (granian runs the app in a worker)."""
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    total = 0
    for p in [pid, *map(int, children)]:
        fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def cpu_per_request_ms(pid: int, method: str, url: str, body: dict | None, headers: dict, n: int) -> float:
    with httpx.Client(timeout=30) as client:
        for _ in range(20):
            client.request(method, url, json=body, headers=headers)
        before = server_cpu_s(pid)
        for _ in range(n):
            client.request(method, url, json=body, headers=headers).read()
        return (server_cpu_s(pid) - before) / n * 1000


def serve_upstream(delay_s: float, pipe: Connection) -> None:
    """The upstream in a process of its own: the benchmark's client threads do not share its interpreter lock."""
    fake = FakeOpenAI(delay_s=delay_s, keep_alive=True).start()
    pipe.send(fake.base_url)
    pipe.recv()  # until the benchmark is done
    fake.stop()


@contextmanager
def upstream_process(delay_s: float) -> Iterator[str]:
    """The fake upstream (serve_upstream) in a process of its own, for as long as the block runs; yields its URL."""
    ours, theirs = multiprocessing.Pipe()
    upstream = multiprocessing.get_context("spawn").Process(target=serve_upstream, args=(delay_s, theirs))
    upstream.start()
    try:
        yield ours.recv()
    finally:
        ours.send("stop")
        upstream.join(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=200, help="per path and round, over all clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    args = parser.parse_args()
    per_client = max(1, args.requests // args.clients)

    stack = ExitStack()
    base_url = stack.enter_context(upstream_process(args.delay_ms / 1000))
    direct = (f"{base_url}/chat/completions", {"model": "gpt-4o-mini", "messages": PROMPT}, {})
    env = {"SWITCHBOARD_LLM_API_BASE": base_url, "SWITCHBOARD_LLM_API_KEY": "sk-bench-0123456789"}
    with running_api(env) as api:
        gateway = f"{api.base}/v1/chat/completions"
        paths = {
            "direct": direct,
            "proxy": (gateway, {"model": "openai/gpt-4o-mini", "messages": PROMPT}, api.headers),
            "routed": (gateway, {"model": "switchboard", "messages": PROMPT,
                                 "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"]}, api.headers),
        }
        streams = {"direct ttft": direct, "routed ttft": paths["routed"]}
        for url, body, headers in paths.values():  # warm-up: connections, the router's first decisions
            run(url, body, headers, args.clients, 3)
        results: dict[str, list[np.ndarray]] = {name: [] for name in [*paths, *streams]}
        for _ in range(args.rounds):
            for name, (url, body, headers) in paths.items():
                results[name].append(run(url, body, headers, args.clients, per_client))
            for name, (url, body, headers) in streams.items():
                results[name].append(run(url, body, headers, args.clients, per_client, stream=True))
        select_body = {"messages": PROMPT, "llm_providers": [{"provider": "openai", "model": "gpt-4o-mini"},
                                                             {"provider": "openai", "model": "gpt-4o"}]}
        cpu = {"GET /ready (floor)": ("GET", f"{api.base}/ready", None, {}),
               "modelSelect": ("POST", f"{api.base}/v2/modelRouter/modelSelect", select_body, api.headers),
               "proxy": ("POST", *paths["proxy"]),
               "routed": ("POST", *paths["routed"]),
               "routed, streamed": ("POST", paths["routed"][0], {**paths["routed"][1], "stream": True},
                                    api.headers)}
        cpu_ms = {name: cpu_per_request_ms(api.pid, *case, n=args.requests) for name, case in cpu.items()}
    stack.close()

    figures = {name: np.concatenate(parts) for name, parts in results.items()}
    print(f"gateway overhead: {args.clients} clients, upstream delay {args.delay_ms:.0f} ms, "
          f"{args.rounds} rounds x {per_client * args.clients} requests per path; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'path':<12} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10}")
    for name, ms in figures.items():
        base = figures["direct ttft" if "ttft" in name else "direct"]
        p50, p99 = np.percentile(ms, 50), np.percentile(ms, 99)
        added = "" if name.startswith("direct") else (f"{p50 - np.percentile(base, 50):>10.2f} "
                                                      f"{p99 - np.percentile(base, 99):>10.2f}")
        print(f"{name:<12} {p50:>8.2f} {p99:>8.2f} {added}")
    print(f"server CPU per request, sequential, {args.requests} requests each:")
    for name, ms in cpu_ms.items():
        print(f"  {name:<20} {ms:6.2f} ms")


if __name__ == "__main__":
    main()
