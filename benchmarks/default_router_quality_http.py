"""Quality of the default router through the HTTP API, the way RouteLLM measures it.

    .venv/bin/python -m benchmarks.default_router_quality_http

Starts the real API, and for every held-out prompt (MMLU and GSM8K rows with sha256(prompt) % 5 == 0, never
trained on; every clean MT-Bench question, a benchmark the router never trains on) asks modelSelect to choose
between gpt-4-1106-preview and Mixtral-8x7B at cost_quality_tradeoff 0..10. Each setting gives one operating point
(strong-call share, benchmark score); APGR, CPT(50%), CPT(80%) follow RouteLLM's definitions (flows.evaluation),
printed beside the random router and the oracle. Targets (issue 3): APGR >= 0.62 MT-Bench, >= 0.60 MMLU,
>= 0.62 GSM8K.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from flows.default_router.data import load_all
from flows.evaluation import curve_from_choices, oracle_curve, random_curve, summarize
from tests.support.service import running_api

STRONG = {"provider": "openai", "model": "gpt-4-1106-preview"}
WEAK = {"provider": "togetherai", "model": "mistralai/Mixtral-8x7B-Instruct-v0.1"}
TARGETS = {"mt_bench": 0.62, "mmlu": 0.60, "gsm8k": 0.62}


def route_all(base: str, headers: dict[str, str], prompts: list[str], preference_id: str | None = None) -> np.ndarray:
    """(11, n) booleans: did setting t send prompt i to the strong model? Each benchmark under its own preference:
    the dial calibrates on a caller's recent traffic (api/routing/dial.py), and one caller's benchmarks run back to
    back would each start on the previous one's calibration."""
    preference = preference_id or new_preference(base, headers)
    jobs = [(t, i) for t in range(11) for i in range(len(prompts))]
    choose = np.zeros((11, len(prompts)), dtype=bool)

    def one(job: tuple[int, int], client: httpx.Client) -> None:
        t, i = job
        r = client.post(f"{base}/v2/modelRouter/modelSelect", headers=headers,
                        json={"messages": [{"role": "user", "content": prompts[i]}],
                              "llm_providers": [STRONG, WEAK], "cost_quality_tradeoff": t,
                              "preference_id": preference})
        r.raise_for_status()
        choose[t, i] = r.json()["providers"][0]["model"] == STRONG["model"]

    with httpx.Client(timeout=30, limits=httpx.Limits(max_connections=8)) as client, \
            ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda job: one(job, client), jobs))
    return choose


def new_preference(base: str, headers: dict[str, str]) -> str:
    r = httpx.post(f"{base}/v2/preferences/userPreferenceCreate", headers=headers, json={"name": "benchmark"},
                   timeout=30)
    r.raise_for_status()
    return r.json()["preference_id"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "routellm")
    args = parser.parse_args()
    benchmarks = load_all(args.data)
    ok = True
    with running_api() as api:
        print(f"{'benchmark':9} {'items':>5}  {'router APGR':>11} {'CPT50':>6} {'CPT80':>6}  "
              f"{'random':>6}  {'oracle':>6}  target   seconds")
        for name, items in benchmarks.items():
            held = items.subset(items.heldout)
            started = time.perf_counter()
            choose = route_all(api.base, api.headers, held.prompts)
            seconds = time.perf_counter() - started
            weak, strong = float(held.weak.mean()), float(held.strong.mean())
            router = summarize(curve_from_choices(choose, held.strong, held.weak), weak, strong)
            rand = summarize(random_curve(held.strong, held.weak), weak, strong)
            oracle = summarize(oracle_curve(held.strong, held.weak), weak, strong)
            met = router.apgr >= TARGETS[name]
            ok &= met
            print(f"{name:9} {len(held.prompts):5d}  {router.apgr:11.3f} {router.cpt50:6.1%} {router.cpt80:6.1%}  "
                  f"{rand.apgr:6.3f}  {oracle.apgr:6.3f}  >= {TARGETS[name]:.2f} {'ok' if met else 'MISSED'}"
                  f"  {seconds:5.0f}")
            shares = ", ".join(f"{s:.2f}" for s in choose.mean(axis=1))
            print(f"          strong-call share by cost_quality_tradeoff 0..10: {shares}")
    print("all targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
