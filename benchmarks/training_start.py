"""Where the time goes from a router-training upload to a running flow, when nothing else runs.

    .venv/bin/python -m benchmarks.training_start [--runs 4] [--rows 60]

Starts a real `switchboard serve` on a temp data dir, then uploads `--runs` small CSVs one after the other (each
waits for the previous router to go live) and polls modelSelect with the new preference every 0.05 s. Each
training's timeline comes from the Prefect server's state history of its flow run (server clock) and from what
modelSelect answered (the job's status, `Retry-After`). Prints per run and the median of all runs but the first
(the first pays one-off costs: the API's first Prefect import, the runner's first flow run):

- upload call: POST /v2/pzn/trainCustomRouter (parse, validate, store, create the flow run);
- poll wait: flow run created (Scheduled) -> Pending, i.e. until the runner's poll saw it;
- process start: Pending -> Running, i.e. the flow run's own process starting and importing the flow;
- flow start: Running -> the job `processing` as modelSelect reports it (the flow's first step);
- training: `processing` -> the router answering modelSelect;
- upload -> live, and the `Retry-After` modelSelect gave right after the upload (vs the time it really took).

Then, in the same run, what a flow run's spawned interpreter imports before its flow can start, timed alternately
(`--import-rounds` each): what it imported when flows/runner.py imported the registry at its top (every flow of the
project, re-imported by the spawned interpreter as `__mp_main__`) against what it imports now (Prefect and the one
flow), with the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import datetime

import httpx

from benchmarks.custom_router_common import serve
from tests.support.synthetic import LLM_PROVIDERS, csv_bytes

PAIR = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]


def _flow_run_id(svc, pid: str) -> str:
    # lazy: the benchmark reads the job through the store owner, as flows do
    from storage.rpc import RemoteStore

    owner = json.loads((svc.data_dir / "run" / "owner.json").read_text())
    store = RemoteStore(owner["url"], owner["token"])
    try:
        return store.routers.state(pid).job.flow_run_id
    finally:
        store.close()


def _states(svc, flow_run_id: str) -> dict[str, float]:
    """Epoch seconds of each state type the flow run went through (its first entry into each)."""
    login = svc.prefect_login.split(":", 1)
    r = httpx.get(f"{svc.prefect_url}/flow_run_states/", params={"flow_run_id": flow_run_id},
                  auth=(login[0], login[1]), timeout=30)
    r.raise_for_status()
    found: dict[str, float] = {}
    for state in sorted(r.json(), key=lambda s: s["timestamp"]):
        found.setdefault(state["type"], datetime.fromisoformat(state["timestamp"]).timestamp())
    return found


def one_training(svc, client: httpx.Client, rows: int, seed: int) -> dict[str, float]:
    started = time.time()
    r = client.post(f"{svc.api_url}/v2/pzn/trainCustomRouter", headers=svc.headers, timeout=120,
                    data={"language": "english", "llm_providers": LLM_PROVIDERS, "prompt_column": "prompt",
                          "maximize": "true"}, files={"dataset_file": ("evals.csv", csv_bytes(rows, seed=seed),
                                                                       "text/csv")})
    uploaded = time.time()
    if r.status_code != 200:
        raise SystemExit(f"upload refused: {r.status_code} {r.text}")
    pid = r.json()["preference_id"]
    retry_after, processing, live = None, None, None
    while live is None:
        if time.time() - started > 600:
            raise SystemExit("the training did not finish within 600 s")
        answer = client.post(f"{svc.api_url}/v2/modelRouter/modelSelect", headers=svc.headers,
                             json={"messages": "ping", "llm_providers": PAIR, "preference_id": pid})
        now = time.time()
        if answer.status_code == 200:
            live = now
        elif answer.status_code == 409:
            details = answer.json()["error"]["details"]
            if retry_after is None:
                retry_after = float(answer.headers["retry-after"])
            if processing is None and details["job_status"] == "processing":
                processing = now
            time.sleep(0.05)
        else:
            raise SystemExit(f"modelSelect answered {answer.status_code}: {answer.text}")
    states = _states(svc, _flow_run_id(svc, pid))
    scheduled, pending, running = states["SCHEDULED"], states["PENDING"], states["RUNNING"]
    processing = processing or running
    return {"upload call": uploaded - started, "poll wait": pending - scheduled, "process start": running - pending,
            "flow start": max(processing - running, 0.0), "training": live - processing,
            "upload -> running": running - started, "upload -> live": live - started,
            "Retry-After given": retry_after or 0.0}


# What a train-custom-router run's spawned interpreter imported before (flows/runner.py imported flows.registry at
# its top, so `__mp_main__` loaded every flow) and what it imports now (the runner module imports nothing at its
# top; unpickling the flow imports its own module).
SPAWNED_BEFORE = "import prefect.flow_engine, flows.registry, flows.train_custom_router"
SPAWNED_NOW = "import prefect.flow_engine, flows.runner, flows.train_custom_router"


def spawned_imports(rounds: int) -> None:
    times: dict[str, list[float]] = {"before": [], "now": []}
    for _ in range(rounds):
        for name, code in (("before", SPAWNED_BEFORE), ("now", SPAWNED_NOW)):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times[name].append(time.perf_counter() - started)
    before, now = statistics.median(times["before"]), statistics.median(times["now"])
    print(f"\na flow run's interpreter, start + imports (median of {rounds}, alternating):")
    print(f"  before (every flow at the runner's top) {before:6.2f} s   {times['before']}")
    print(f"  now (Prefect and the one flow)          {now:6.2f} s   {times['now']}")
    print(f"  now / before                            {now / before:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--rows", type=int, default=60)
    parser.add_argument("--import-rounds", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} CPUs)")
    svc = serve()
    try:
        results = []
        with httpx.Client(timeout=60) as client:
            for n in range(args.runs):
                figures = one_training(svc, client, args.rows, seed=n)
                results.append(figures)
                print(f"run {n + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in figures.items()), flush=True)
        later = results[1:] or results
        print(f"\nmedian of runs 2..{len(results)} ({args.rows} rows each):")
        for key in results[0]:
            middle = statistics.median(r[key] for r in later)
            print(f"  {key:<18} {middle:6.2f} s   (first run {results[0][key]:.2f} s)")
    finally:
        svc.stop()
    if args.import_rounds:
        spawned_imports(args.import_rounds)
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
