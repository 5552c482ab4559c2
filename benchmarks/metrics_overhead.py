"""What metrics cost: modelSelect and gateway latency with metrics on and off, side by side in one run.

    .venv/bin/python -m benchmarks.metrics_overhead                  # 4 clients, 12 batches of 40 requests
    .venv/bin/python -m benchmarks.metrics_overhead --batches 30

Two copies of the real API (granian, one worker each, tests/support/service.py) on the same machine and the same
local upstream (tests/support/fakes/openai_server.py, keep-alive, 20 ms per answer): one as `serve` runs it, metrics
on and its values in a multiprocess folder (api/observability/metrics_dir.py), one with SWITCHBOARD_METRICS=0. Small
batches alternate between the two, so they share the machine's load as it drifts. Prints p50/p99 per path and server,
the ratio of the p50s (target: metrics on within 3 % of off), and the server CPU per request (one client, requests in
sequence), which moves less with the machine's load than wall-clock time; then the CPU of one request's metric
updates alone (multiprocess mode, as served), and the app's own CPU per request with metrics on and off called
through ASGI in one process (benchmarks/metrics_overhead_app.py): figures a busy machine's wall clock cannot resolve.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from contextlib import ExitStack

import numpy as np

from benchmarks.gateway_overhead import PROMPT, cpu_per_request_ms, run, upstream_process
from tests.support.service import running_api

SELECT = {"messages": PROMPT, "llm_providers": [{"provider": "openai", "model": "gpt-4o-mini"},
                                                {"provider": "openai", "model": "gpt-4o"}]}
ROUTED = {"model": "switchboard", "messages": PROMPT, "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batches", type=int, default=12, help="per path and server, alternating on and off")
    parser.add_argument("--batch", type=int, default=40, help="requests per batch, over all clients")
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--cpu-batch", type=int, default=100, help="sequential requests per CPU batch (as many "
                        "batches): CPU time is counted in 10 ms ticks, so a batch must take many")
    args = parser.parse_args()
    per_client = max(1, args.batch // args.clients)

    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="switchboard-metrics-") as folder:
        base_url = stack.enter_context(upstream_process(args.delay_ms / 1000))
        common = {"SWITCHBOARD_LLM_API_BASE": base_url, "SWITCHBOARD_LLM_API_KEY": "sk-bench-0123456789"}
        servers = {"on": stack.enter_context(running_api({**common, "PROMETHEUS_MULTIPROC_DIR": folder})),
                   "off": stack.enter_context(running_api({**common, "SWITCHBOARD_METRICS": "0"}))}

        def paths(api) -> dict[str, tuple[str, dict, dict]]:
            return {"modelSelect": (f"{api.base}/v2/modelRouter/modelSelect", SELECT, api.headers),
                    "gateway": (f"{api.base}/v1/chat/completions", ROUTED, api.headers)}

        for api in servers.values():  # warm-up: connections, the router's first decisions
            for url, body, headers in paths(api).values():
                run(url, body, headers, args.clients, 3)
        # Small batches, alternating between the servers, so that the machine's load drifts over both alike.
        wall: dict[tuple[str, str], list[np.ndarray]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.batches):
            for path in ("modelSelect", "gateway"):
                for name, api in servers.items():
                    url, body, headers = paths(api)[path]
                    wall.setdefault((path, name), []).append(run(url, body, headers, args.clients, per_client))
                    cpu.setdefault((path, name), []).append(
                        cpu_per_request_ms(api.pid, "POST", url, body, headers, n=args.cpu_batch))

    print(f"metrics on vs off: {args.clients} clients, upstream delay {args.delay_ms:.0f} ms, {args.batches} "
          f"alternating batches of {per_client * args.clients} requests per path and server, CPU over "
          f"{args.batches} x {args.cpu_batch} sequential requests; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'path':<12} {'metrics':<8} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/req':>11}")
    for path in ("modelSelect", "gateway"):
        p50, cpu_ms = {}, {}
        for name in ("on", "off"):
            ms = np.concatenate(wall[(path, name)])
            p50[name], cpu_ms[name] = np.percentile(ms, 50), float(np.mean(cpu[(path, name)]))
            print(f"{path:<12} {name:<8} {p50[name]:>8.2f} {np.percentile(ms, 99):>8.2f} {cpu_ms[name]:>11.3f}")
        print(f"{path:<12} p50 on/off = {p50['on'] / p50['off']:.3f}; CPU on/off = {cpu_ms['on'] / cpu_ms['off']:.3f}")
    for path, updates in (("modelSelect", SELECT_UPDATES), ("gateway", GATEWAY_UPDATES)):
        print(f"{path}: one request's metric updates alone, in a process of their own: {updates_us(updates):.1f} us")
    print(in_process(args.batches * 3), end="")


PREAMBLE = """
import timeit
from api.observability import metrics as m
"""
# What the middleware and the hooks update for one request of each kind (api/observability/middleware.py, hooks.py).
SELECT_UPDATES = """
def one():
    m.labelled(m.HTTP_REQUESTS, "/v2/modelRouter/modelSelect", "POST", "200").inc()
    m.labelled(m.HTTP_DURATION, "/v2/modelRouter/modelSelect", "POST").observe(0.004)
    m.labelled(m.DECISIONS, "default", "openai/gpt-4o-mini").inc()
    m.labelled(m.DECISION_DURATION, "default").observe(0.002)
"""
GATEWAY_UPDATES = SELECT_UPDATES.replace("/v2/modelRouter/modelSelect", "/v1/chat/completions") + """
    m.labelled(m.UPSTREAM_FIRST_BYTE, "openai", "openai/gpt-4o-mini").observe(0.02)
    m.labelled(m.UPSTREAM_CALLS, "openai", "openai/gpt-4o-mini", "ok").inc()
    m.labelled(m.UPSTREAM_DURATION, "openai", "openai/gpt-4o-mini").observe(0.02)
    m.labelled(m.TOKENS, "openai/gpt-4o-mini", "input").inc(120)
    m.labelled(m.TOKENS, "openai/gpt-4o-mini", "output").inc(12)
    m.labelled(m.SPEND, "openai/gpt-4o-mini").inc(0.0001)
    m.labelled(m.OVERHEAD, "false").observe(0.001)
"""
TIMING = """
n = 20000
print(min(timeit.repeat(one, number=n, repeat=5)) / n * 1e6)
"""


def in_fresh_interpreter(argv: list[str]) -> str:
    """Its output: prometheus_client must start in multiprocess mode, as in the served API, so a process of its own."""
    with tempfile.TemporaryDirectory(prefix="switchboard-metrics-") as folder:
        return subprocess.run([sys.executable, *argv], env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": folder},
                              capture_output=True, text=True, check=True).stdout


def updates_us(updates: str) -> float:
    return float(in_fresh_interpreter(["-c", PREAMBLE + updates + TIMING]).strip())


def in_process(batches: int) -> str:
    """The app's own CPU per request, on and off, through ASGI in one process (benchmarks/metrics_overhead_app.py)."""
    return in_fresh_interpreter(["-m", "benchmarks.metrics_overhead_app", str(batches)])


if __name__ == "__main__":
    main()
