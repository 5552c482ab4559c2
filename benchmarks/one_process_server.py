"""The API with one worker under `python -m granian` (a main process that forks and watches the worker) against
granian's embedded server in one process (api/cli/one_process_server.py, what `serve` runs): resident memory once
started, and the server's CPU per `GET /ready` (the floor, where the server's own cost weighs most) under wrk.

    .venv/bin/python -m benchmarks.one_process_server [--pairs 4] [--duration 4]

The two alternate, each on a fresh data dir (the API owns its DuckDB file), so both meet the same machine load.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from api.cli.http_options import connection_args
from api.cli.supervisor import one_process_argv
from api.settings import get_settings
from benchmarks.serve_startup import descendants, rss_mib
from tests.support.service import free_port, wait_for_api

SERVERS = ("granian main + worker", "one process")


def argv(server: str, port: int) -> list[str]:
    settings = get_settings()
    if server == SERVERS[1]:
        return one_process_argv("127.0.0.1", port, settings, "api.app:create_app")
    return [sys.executable, "-m", "granian", "--interface", "asgi", "--factory", "--host", "127.0.0.1", "--port",
            str(port), "--workers", "1", "--log-level", "warning", *connection_args(settings), "api.app:create_app"]


def cpu_s(pid: int) -> float:
    total = 0.0
    for p in descendants(pid):
        fields = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return total


def measure(server: str, duration: int) -> tuple[float, float]:
    """(MiB of every process of the server, ms of its CPU per /ready request)."""
    data, port = tempfile.mkdtemp(prefix="one-process-"), free_port()
    env = dict(os.environ, SWITCHBOARD_DATA_DIR=data, SWITCHBOARD_PORT=str(port), LITELLM_LOCAL_MODEL_COST_MAP="True")
    process = subprocess.Popen(argv(server, port), env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_for_api(f"http://127.0.0.1:{port}")
        time.sleep(3)  # past start-up's transient work
        mib = sum(rss_mib(p) for p in descendants(process.pid))
        before = cpu_s(process.pid)
        out = subprocess.run(["wrk", "-t1", "-c8", f"-d{duration}s", f"http://127.0.0.1:{port}/ready"],
                             capture_output=True, text=True, check=True).stdout
        requests = int(re.search(r"(\d+) requests in", out).group(1))
        return mib, 1000 * (cpu_s(process.pid) - before) / requests
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=60)
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--duration", type=int, default=4, help="seconds of wrk per measurement")
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {server: [] for server in SERVERS}
    for _ in range(args.pairs):
        for server in SERVERS:
            results[server].append(measure(server, args.duration))
            print(f"{server:>21}: {results[server][-1][0]:.0f} MiB, {results[server][-1][1]:.3f} ms CPU per /ready "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
    for server, runs in results.items():
        print(f"{server:>21}: median {statistics.median(m for m, _ in runs):.0f} MiB, "
              f"{statistics.median(c for _, c in runs):.3f} ms CPU per /ready over {len(runs)} runs")


if __name__ == "__main__":
    main()
