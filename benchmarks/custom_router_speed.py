"""From upload to a live router: 10,000 rows x 10 models through POST /v2/pzn/trainCustomRouter.

    .venv/bin/python -m benchmarks.custom_router_speed [--multilingual]

Starts a real `switchboard serve` (Prefect server, flow runner, API) on a temp data dir, uploads a 10,000-row CSV
with 10 catalogue models, and polls modelSelect with the new preference every 0.25 s until it stops answering
409. Prints: the upload call (parse + validation + Parquet + queueing), time to a router answering modelSelect,
the flow's own training time, its peak memory (the flow runs in its own process) and the API's memory.
Target (issue 4): <= 60 s from upload to a router answering, memory < 4 GB, on a 2-core machine.

Data: 10,000 MMLU prompts (RouteLLM, contaminated rows dropped, a fixed random sample) so the text is real.
Only time and memory are measured here, so the 10 models' scores are the data's two real columns (GPT-4 and
Mixtral correctness) repeated across the 10 models; the quality benchmarks use real per-model scores.
With --multilingual the table starts with RouterDC's 5,935 training prompts (../shared/data/routerdc: 2,000 of
them Chinese, CMMLU) and their 7 models' scores (model j % 7 in column j), filled up to 10,000 with the MMLU rows,
and is uploaded with `language=multilingual`.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from pathlib import Path

import httpx
import numpy as np

from benchmarks.custom_router_common import SHARED, csv_of, serve, training_metrics, upload
from flows.default_router.data import load_mmlu

MODELS = [("openai", "gpt-4o"), ("openai", "gpt-4o-mini"), ("anthropic", "claude-sonnet-4-5-20250929"),
          ("anthropic", "claude-haiku-4-5-20251001"), ("google", "gemini-2.5-pro"), ("google", "gemini-2.5-flash"),
          ("mistral", "mistral-large-latest"), ("mistral", "mistral-small-latest"), ("deepseek", "deepseek-chat"),
          ("xai", "grok-4.20")]
ROWS = 10_000
LIMIT = 5 * 1024 * 1024


def dataset(multilingual: bool = False, rows: int = ROWS, models: int = len(MODELS)) -> bytes:
    items = load_mmlu(SHARED / "routellm")
    order = np.random.default_rng(0).permutation(len(items.prompts))
    keys = [f"{p}/{m}" for p, m in MODELS[:models]]
    first_prompts, first_scores = [], []
    if multilingual:
        # lazy: only this variant reads RouterDC's files
        from benchmarks.custom_router_routerdc import load as load_routerdc

        first_prompts, _, routerdc_scores, _ = load_routerdc()
        first_scores = [[float(row[j % routerdc_scores.shape[1]]) for j in range(models)]
                        for row in routerdc_scores]
    chosen = order[:rows - len(first_prompts)]
    while True:
        scores = [[float((items.strong if j % 2 == 0 else items.weak)[i]) for j in range(models)]
                  for i in chosen]
        data = csv_of(first_prompts + [items.prompts[i] for i in chosen], keys, first_scores + scores)
        if len(data) <= LIMIT:
            return data
        longest = int(np.argmax([len(items.prompts[i]) for i in chosen]))  # keep 10,000 rows under 5 MiB
        chosen = np.delete(chosen, longest)
        chosen = np.append(chosen, order[rows + (len(order) - rows) // 2 + len(chosen) % 97])


def api_rss_mb(data_dir: Path) -> float:
    """Resident memory of the API processes (granian and its worker) of this data dir."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes()
            status = (proc / "status").read_text()
        except OSError:
            continue
        if b"granian" in cmd and str(data_dir).encode() in env:
            total += int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
    return total / 1024


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--multilingual", action="store_true", help="RouterDC's English and Chinese rows first")
    parser.add_argument("--rows", type=int, default=ROWS, help="rows of the upload (issue 21's target: 5,000)")
    parser.add_argument("--models", type=int, default=len(MODELS), choices=range(2, len(MODELS) + 1),
                        help="the first N models of MODELS (issue 21's target: 9)")
    args = parser.parse_args()
    data = dataset(args.multilingual, args.rows, args.models)
    language = "multilingual" if args.multilingual else "english"
    providers = [{"provider": p, "model": m} for p, m in MODELS[:args.models]]
    print(f"dataset: {args.rows:,} rows x {args.models} models, {len(data):,} bytes, language={language}; "
          f"{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.2f}")
    svc = serve()
    try:
        with httpx.Client(timeout=60) as client:
            started = time.perf_counter()
            pid, upload_s = upload(svc, data, providers, language=language)
            polls = 0
            while True:
                r = client.post(f"{svc.api_url}/v2/modelRouter/modelSelect", headers=svc.headers,
                                json={"messages": "What is the derivative of x^3?", "llm_providers": providers,
                                      "preference_id": pid})
                polls += 1
                if r.status_code == 200:
                    break
                if r.status_code != 409 or time.perf_counter() - started > 900:
                    raise SystemExit(f"no router: {r.status_code} {r.text}")
                time.sleep(0.25)
            ready_s = time.perf_counter() - started
            metrics = training_metrics(svc, pid)
            api_mb = api_rss_mb(svc.data_dir)
    finally:
        svc.stop()
    print(f"upload call (multipart + polars validation + Parquet + queue the flow): {upload_s:.2f} s")
    print(f"upload -> router answering modelSelect:  {ready_s:.1f} s   (target <= 60 s: "
          f"{'MET' if ready_s <= 60 else 'MISSED'}; {polls} polls)")
    print(f"flow training time (load .. publish):    {metrics.get('training_seconds', float('nan')):.1f} s")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"flow peak memory: {metrics.get('peak_rss_mb', float('nan')):.0f} MB; API memory after: {api_mb:.0f} MB"
          f"   (target < 4 GB: {'MET' if metrics.get('peak_rss_mb', 1e9) + api_mb < 4096 else 'MISSED'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
