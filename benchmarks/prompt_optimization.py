"""Benchmark: one prompt optimization run, 25 train goldens (+ 8 test) and 3 target models, against the local fake
OpenAI-compatible server (tests/support/fakes/openai_server.py), through the whole service.

It starts `switchboard serve` (Prefect server, flow runner, API) on free ports with every provider pointed at the
fake server, starts the run over HTTP, polls the status every 0.25 s, and reports:
- wall time from POST /v2/prompt/optimize to `completed` (and the flow run's own time, first to last LLM call);
- LLM calls per task type and per role (target / judge / reflection), from the run's usage records;
- orchestration overhead: wall time during which no LLM call was in flight (the union of the calls' intervals is
  the time spent waiting on the model; everything else is queueing, Prefect, DSPy/GEPA, storage and HTTP).

    .venv/bin/python -m benchmarks.prompt_optimization [--latency 0.2] [--metric LLMaaJ:Sem_Sim_1]

--latency adds that many seconds to every fake model response (0 measures pure overhead).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tests.support.fakes.openai_server import FakeOpenAI, capital_goldens, teach_goldens
from tests.support.service import free_port, start_service

TARGETS = [{"provider": "openai", "model": "gpt-4o-mini"}, {"provider": "anthropic", "model": "claude-haiku-4-5"},
           {"provider": "google", "model": "gemini-2.5-flash"}]


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end] intervals."""
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every fake model response")
    parser.add_argument("--metric", default="LLMaaJ:Sem_Sim_1", choices=["LLMaaJ:Sem_Sim_1", "JSON_Match"])
    args = parser.parse_args()

    fake = FakeOpenAI(delay_s=args.latency).start()
    as_json = args.metric == "JSON_Match"
    train, test = capital_goldens(25, as_json=as_json), capital_goldens(8, start=25, as_json=as_json)
    teach_goldens(fake, train + test)
    os.environ["SWITCHBOARD_LLM_API_BASE"] = fake.base_url
    os.environ.setdefault("PREFECT_RUNNER_POLL_FREQUENCY", "2")
    data_dir = Path(tempfile.mkdtemp(prefix="switchboard-bench-po-")) / "data"
    t0 = time.monotonic()
    service = start_service(data_dir, free_port(), free_port())
    print(f"service up in {time.monotonic() - t0:.1f} s ({service.api_url})")
    try:
        h = {"Authorization": f"Bearer {service.admin_key}"}
        body = {"system_prompt": "You are a geography assistant.", "template": "Question: {question}",
                "fields": ["question"], "train_goldens": train, "test_goldens": test, "target_models": TARGETS,
                "origin_model": {"provider": "openai", "model": "gpt-4o"}, "evaluation_metric": args.metric}
        with httpx.Client(base_url=service.api_url, headers=h, timeout=60) as client:
            started = time.time()
            r = client.post("/v2/prompt/optimize", json=body)
            r.raise_for_status()
            run_id = r.json()["optimization_run_id"]
            statuses = []
            while True:
                status = client.get(f"/v2/prompt/optimizeStatus/{run_id}").json()["status"]
                if not statuses or statuses[-1][0] != status:
                    statuses.append((status, time.time() - started))
                if status in ("completed", "failed", "cancelled"):
                    break
                time.sleep(0.25)
            wall = time.time() - started
            results = client.get(f"/v2/prompt/optimizeResults/{run_id}").json()
            costs = client.get(f"/v2/prompt/optimize/{run_id}/costs").json()
    finally:
        service.stop()
        fake.stop()

    import duckdb

    from api.prompt_optimization.usage_log import run_usage  # the Parquet log, with role and latency columns

    conn = duckdb.connect()
    rows = conn.execute(
        "SELECT task_type, role, timestamp, latency_s FROM read_parquet(?, hive_partitioning = true)"
        " WHERE adaptation_run_id = ?", [str(data_dir / "events" / "llm_usage" / "day=*" / "*.parquet"), run_id]
    ).fetchall()
    assert len(rows) == len(costs["usage_records"]) == len(run_usage(data_dir / "events", run_id))
    intervals = [(ts - lat, ts) for _, _, ts, lat in rows]
    waiting = busy_seconds(intervals)
    first, last = min(s for s, _ in intervals), max(e for _, e in intervals)
    print(f"\nrun {run_id}: {results['job_status']}; metric {args.metric}; fake model latency {args.latency:g} s")
    print("status timeline: " + ", ".join(f"{s} at {t:.1f} s" for s, t in statuses))
    for t in results["target_models"]:
        print(f"  {t['model_name']:<28} {t['pre_optimization_score']:.3f} -> {t['post_optimization_score']:.3f}"
              f"  ${t['cost']:.6f}")
    print(f"  origin {results['origin_model']['model_name']}: {results['origin_model']['score']:.3f}")
    print(f"\nwall time (POST -> completed seen): {wall:.2f} s")
    print(f"  before the first LLM call (queue, runner pick-up, flow start): {first - started:.2f} s")
    print(f"  first to last LLM call: {last - first:.2f} s; after the last call until seen completed:"
          f" {wall - (last - started):.2f} s")
    print(f"LLM calls: {len(rows)}; total cost ${costs['total_cost']:.6f}")
    for task, n in sorted(Counter(r[0] for r in rows).items()):
        print(f"  {task:<30} {n}")
    for role, n in sorted(Counter(r[1] for r in rows).items()):
        print(f"  role {role:<25} {n}")
    print(f"time waiting on the model (union of call intervals): {waiting:.2f} s")
    print(f"orchestration overhead (wall - waiting): {wall - waiting:.2f} s "
          f"({100 * (wall - waiting) / wall:.0f}% of wall); within the flow's active span:"
          f" {(last - first) - waiting:.2f} s")


if __name__ == "__main__":
    main()
