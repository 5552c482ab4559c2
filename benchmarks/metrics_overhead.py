"""What metrics cost: modelSelect and gateway latency with metrics on and off, side by side in one run.

    .venv/bin/python -m benchmarks.metrics_overhead                  # 4 clients, 120 requests, 3 rounds
    .venv/bin/python -m benchmarks.metrics_overhead --requests 200 --rounds 5

Two copies of the real API (granian, one worker each, tests/support/service.py) on the same machine and the same
local upstream (tests/support/fakes/openai_server.py, keep-alive, 20 ms per answer): one as `serve` runs it, metrics
on and its values in a multiprocess folder (api/observability/metrics_dir.py), one with SWITCHBOARD_METRICS=0. Each
round runs every path on both servers in turn, so they share the machine's load. Prints p50/p99 per path and server,
the ratio of the p50s (target: metrics on within 3 % of off), and the server CPU per request (one client, requests in
sequence), which moves less with the machine's load than wall-clock time, and the CPU of one request's metric
updates measured alone in this process (multiprocess mode, as served), which does not move with it at all.
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
    parser.add_argument("--requests", type=int, default=120, help="per path, server and round, over all clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--cpu-requests", type=int, default=600, help="per path and server, for the CPU figures "
                        "(CPU time is counted in 10 ms ticks: fewer requests, coarser figures)")
    args = parser.parse_args()
    per_client = max(1, args.requests // args.clients)

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
        results: dict[tuple[str, str], list[np.ndarray]] = {}
        for _ in range(args.rounds):
            for path in ("modelSelect", "gateway"):
                for name, api in servers.items():
                    url, body, headers = paths(api)[path]
                    results.setdefault((path, name), []).append(run(url, body, headers, args.clients, per_client))
        cpu_ms = {(path, name): cpu_per_request_ms(api.pid, "POST", *paths(api)[path], n=args.cpu_requests)
                  for path in ("modelSelect", "gateway") for name, api in servers.items()}

    print(f"metrics on vs off: {args.clients} clients, upstream delay {args.delay_ms:.0f} ms, {args.rounds} rounds x "
          f"{per_client * args.clients} requests per path and server; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'path':<12} {'metrics':<8} {'p50 ms':>8} {'p99 ms':>8} {'CPU ms/req':>11}")
    for path in ("modelSelect", "gateway"):
        p50 = {}
        for name in ("on", "off"):
            ms = np.concatenate(results[(path, name)])
            p50[name] = np.percentile(ms, 50)
            print(f"{path:<12} {name:<8} {p50[name]:>8.2f} {np.percentile(ms, 99):>8.2f} {cpu_ms[(path, name)]:>11.3f}")
        print(f"{path:<12} p50 on/off = {p50['on'] / p50['off']:.3f}; CPU on/off = "
              f"{cpu_ms[(path, 'on')] / cpu_ms[(path, 'off')]:.3f}")

    print(f"one request's metric updates alone (HTTP counter and histogram, decision counter and histogram, "
          f"access line at INFO off): {updates_us():.1f} us")


UPDATES = """
import logging, os, timeit
from api.observability import access_log, metrics as m
from api.observability.exchange import Exchange
logging.getLogger("switchboard.access").setLevel(logging.WARNING)
def one():
    m.labelled(m.HTTP_REQUESTS, "/v2/modelRouter/modelSelect", "POST", "200").inc()
    m.labelled(m.HTTP_DURATION, "/v2/modelRouter/modelSelect", "POST").observe(0.004)
    m.labelled(m.DECISIONS, "default", "openai/gpt-4o-mini").inc()
    m.labelled(m.DECISION_DURATION, "default").observe(0.002)
    access_log.write(Exchange("POST", "/v2/modelRouter/modelSelect", status=200), "/v2/modelRouter/modelSelect")
n = 20000
print(min(timeit.repeat(one, number=n, repeat=5)) / n * 1e6)
"""


def updates_us() -> float:
    """In a fresh interpreter, so that prometheus_client starts in multiprocess mode as the served API does."""
    with tempfile.TemporaryDirectory(prefix="switchboard-metrics-") as folder:
        out = subprocess.run([sys.executable, "-c", UPDATES], env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": folder},
                             capture_output=True, text=True, check=True).stdout
    return float(out.strip())


if __name__ == "__main__":
    main()
