"""Every hot request against the HTTP floor, in one run on one server: CPU per request, throughput, p50 and p99.

    .venv/bin/python -m benchmarks.hot_path                      # 5 s per endpoint, 8 connections, then serve's RSS
    cd <another source tree> && /path/to/.venv/bin/python /path/to/benchmarks/hot_path.py --no-rss   # compare builds

A local OpenAI-compatible upstream (tests/support/fakes/openai_server.py in a process of its own, no delay) and the
API as `switchboard serve` runs it (granian, one worker; tests/support/service.py) pointed at it. wrk (8
connections) drives, one after the other on the same server: `GET /ready` (the floor), modelSelect (10 candidates,
a ~2,000-character prompt varied per request: benchmarks/routing_latency.py's script), `/v1/chat/completions`
proxied (`openai/gpt-4o-mini`) and routed (`switchboard`, 2 candidates), and the upstream called directly. For each
it prints p50, p99, requests/s and the server's CPU time per request (user + system of the API's processes over the
run, divided by the requests wrk completed), and each one's ratio to `/ready`: on a machine shared with other work
the ratios move much less than the absolute figures. Then streamed time to the first event, direct, proxied and
routed, with 1 and with 8 httpx clients (streamed_ttft; benchmarks/gateway_overhead.py), and, unless --no-rss, the
idle resident memory of the whole `switchboard serve` (every process, after start-up: benchmarks/serve_startup.py).
Targets: issue 36.

It imports the project from the current directory (it checks), so the same script measures another source tree.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.getcwd())

ENDPOINTS = ("GET /ready (floor)", "modelSelect", "gateway, proxied", "gateway, routed", "upstream, direct")
PROMPT = [{"role": "user", "content": "What is the capital of Country007? " * 20}]
FIXED_BODY_LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
%s
wrk.body = [==[%s]==]
"""


def fixed_body_script(body: dict, headers: dict[str, str]) -> str:
    lines = "\n".join(f'wrk.headers["{name}"] = "{value}"' for name, value in headers.items())
    return FIXED_BODY_LUA % (lines, json.dumps(body))


def wrk_run(url: str, script: Path | None, seconds: int, connections: int) -> str:
    what = ["-s", str(script), url] if script else [url]
    return subprocess.run(["wrk", "-t1", "-c", str(connections), "-d", f"{seconds}s", "--latency", *what],
                          capture_output=True, text=True, check=True).stdout


def streamed_ttft(upstream: str, gateway: str, auth: dict[str, str], streams: int) -> dict[int, dict[str, list[float]]]:
    """Time to the first event of a streamed chat completion (ms), the upstream called directly and through the
    gateway proxied and routed: one client in sequence (the path's own latency) and 8 clients at once (with the
    queueing behind the other calls' CPU that the worker's one event loop adds). The paths take turns in rounds of
    10 streams a client, so they share the machine's load."""
    from benchmarks.gateway_overhead import run  # lazy: imported from the current tree, as in main()

    bodies = {"direct": (f"{upstream}/chat/completions", {"model": "gpt-4o-mini", "messages": PROMPT}, {}),
              "proxied": (gateway, {"model": "openai/gpt-4o-mini", "messages": PROMPT}, auth),
              "routed": (gateway, {"model": "switchboard", "messages": PROMPT,
                                   "llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4o"]}, auth)}
    out: dict[int, dict[str, list[float]]] = {}
    for clients in (1, 8):
        out[clients] = {name: [] for name in bodies}
        for _ in range(max(1, streams // (10 * clients))):
            for name, (url, body, headers) in bodies.items():
                out[clients][name].extend(run(url, body, headers, clients, 10, stream=True))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=5, help="seconds of load per endpoint")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--streams", type=int, default=200,
                        help="streamed requests per path and client count for time to first token")
    parser.add_argument("--no-rss", action="store_true", help="skip starting the whole `switchboard serve`")
    args = parser.parse_args()

    # lazy: imported after the path above is set, so they are the current tree's modules
    import api
    from benchmarks.gateway_overhead import server_cpu_s, upstream_process
    from benchmarks.routing_latency import CANDIDATES, LUA, wrk_figures
    from tests.support.service import running_api

    assert api.__file__.startswith(os.getcwd()), f"imported {api.__file__}, not this tree's api"
    rows: dict[str, tuple[float, float, float, float | None]] = {}  # p50 ms, p99 ms, requests/s, CPU ms/request
    with upstream_process(0.0) as upstream:
        # No auto-onboarding: modelSelect's candidates without figures would start it, and with it a temporary
        # Prefect server inside the API process, whose start-up CPU then lands on the calls measured after it.
        env = {"SWITCHBOARD_LLM_API_BASE": upstream, "SWITCHBOARD_LLM_API_KEY": "sk-bench-0123456789",
               "SWITCHBOARD_ONBOARD_AUTO": "false"}
        with running_api(env) as server:
            work = Path(tempfile.mkdtemp(prefix="hot-path-"))
            auth = {"Authorization": f"Bearer {server.key}"}
            gateway = f"{server.base}/v1/chat/completions"
            providers = json.dumps([{"provider": p, "model": m} for p, m in CANDIDATES])
            scripts = {
                "modelSelect": LUA.replace("%s", providers, 1).replace("Bearer %s", f"Bearer {server.key}"),
                "gateway, proxied": fixed_body_script({"model": "openai/gpt-4o-mini", "messages": PROMPT}, auth),
                "gateway, routed": fixed_body_script({"model": "switchboard", "messages": PROMPT, "llm_providers": [
                    "openai/gpt-4o-mini", "openai/gpt-4o"]}, auth),
                "upstream, direct": fixed_body_script({"model": "gpt-4o-mini", "messages": PROMPT}, {}),
            }
            urls = {ENDPOINTS[0]: f"{server.base}/ready", "modelSelect": f"{server.base}/v2/modelRouter/modelSelect",
                    "gateway, proxied": gateway, "gateway, routed": gateway,
                    "upstream, direct": f"{upstream}/chat/completions"}
            for name in ENDPOINTS:
                script = None
                if name in scripts:
                    script = work / f"{len(rows)}.lua"
                    script.write_text(scripts[name])
                wrk_run(urls[name], script, 2, args.connections)  # warm-up: connections, the router's first calls
                before = server_cpu_s(server.pid)
                out = wrk_run(urls[name], script, args.duration, args.connections)
                cpu = server_cpu_s(server.pid) - before
                done = int(re.search(r"(\d+) requests in", out).group(1))
                if re.search(r"Non-2xx or 3xx responses: (\d+)", out) and name != ENDPOINTS[0]:
                    raise SystemExit(f"{name}: wrk saw error responses:\n{out}")  # /ready: 503 without Prefect
                rows[name] = (*wrk_figures(out), None if name == "upstream, direct" else cpu / done * 1000)
            ttft = streamed_ttft(upstream, gateway, auth, args.streams)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.getcwd()}: hot paths, {args.connections} connections, {args.duration} s each (wrk, loopback, "
          f"{os.cpu_count()} cores, load average {load})")
    floor = rows[ENDPOINTS[0]]
    print(f"{'endpoint':<20} {'p50 ms':>7} {'p99 ms':>7} {'req/s':>7} {'CPU ms/req':>10} {'req/s / floor':>13} "
          f"{'CPU / floor':>11}")
    for name, (p50, p99, rps, cpu) in rows.items():
        cpu_text = f"{cpu:10.3f}" if cpu is not None else f"{'-':>10}"
        cpu_ratio = f"{cpu / floor[3]:10.1f}x" if cpu is not None else f"{'-':>11}"
        print(f"{name:<20} {p50:7.2f} {p99:7.2f} {rps:7.0f} {cpu_text} {rps / floor[2]:12.0%} {cpu_ratio}")
    import numpy as np  # lazy: with the project's other imports above

    for clients, paths in ttft.items():
        d50 = np.percentile(paths["direct"], 50)
        print(f"streamed time to first event, {clients} client(s), {len(paths['direct'])} streams a path: direct p50 "
              f"{d50:.2f} ms, p99 {np.percentile(paths['direct'], 99):.2f} ms; " + "; ".join(
                  f"{name} p50 {np.percentile(took, 50):.2f} ms (added {np.percentile(took, 50) - d50:.2f}), p99 "
                  f"{np.percentile(took, 99):.2f} ms" for name, took in paths.items() if name != "direct"))
    if not args.no_rss:
        from benchmarks.serve_startup import start_once  # lazy: with the project's other imports above

        started = start_once(Path(os.getcwd()), Path(tempfile.mkdtemp(prefix="hot-path-serve-")), idle_s=10)
        print(f"idle RSS of `switchboard serve`: {started.total_mib:.0f} MiB over {len(started.rss_mib)} processes ("
              + ", ".join(f"{name} {mib:.0f}" for name, mib in started.rss_mib.items()) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
