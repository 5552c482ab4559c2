"""How the default router does on benchmarks it never trained on: leave one benchmark out, through the HTTP API.

    .venv/bin/python -m benchmarks.default_router_unseen [--only mmlu,gsm8k] [--pair-sample 3000]

For each benchmark the router trains on (MMLU, GSM8K, ARC-Challenge, HumanEval) in turn:
1. train the default router without it: every source's copy left out (flows/default_router/train.py leave_out),
   and every figure in datasets/model_benchmarks.csv that was measured on that benchmark's own RouterDC file
   removed too, so nothing about it reaches the router;
2. serve that router (SWITCHBOARD_DEFAULT_ROUTER_DIR, SWITCHBOARD_MODEL_FIGURES) and route the benchmark through
   modelSelect:
   - GPT-4-1106 vs Mixtral-8x7B (RouteLLM's MMLU, GSM8K): every prompt at cost_quality_tradeoff 0..10, APGR as
     RouteLLM computes it, and the largest change of the strong-call share between adjacent settings;
   - RouterDC's 7 open models (equal prices, as custom models): accuracy of the chosen model at t = 0 against the
     best single model on that benchmark.
With --keep-figures the figures stay: the router still never sees a query of the benchmark, but knows each model's
public score on it, as it would for real models with published figures.
Then the shipped router (trained on everything allowed) routes the sets no router here trains on: MT-Bench (pair)
and CMMLU (7 models). The pooled figure is the mean APGR over the pair benchmarks never trained on (MMLU and GSM8K
left out, MT-Bench).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from api.routing.default_router import DEFAULT_ARTEFACT_DIR, DEFAULT_PRIOR_PATH
from benchmarks.default_router_quality_http import route_all
from flows.default_router.data import load_all
from flows.default_router.multi import Outcomes
from flows.default_router.skill_training import BENCHMARKS, outcome_sets
from flows.default_router.train import train_default_router
from flows.evaluation import curve_from_choices, oracle_curve, summarize
from tests.support.service import running_api

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FIGURE_BENCHMARK = {"mmlu": "MMLU", "gsm8k": "GSM8K", "humaneval": "HumanEval"}
ROUTERDC_SOURCE = "shuhao02/RouterDC"  # figures measured on RouterDC's own files (datasets/model_benchmarks.csv)
ENCODER_FILES = ("encoder.json", "static_embedding.npy", "tokenizer.json", "calibration_pool.jsonl")


def masked_figures(benchmark: str, out: Path) -> Path:
    """A copy of the figures without those measured on the left-out benchmark's own RouterDC file."""
    with DEFAULT_PRIOR_PATH.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    kept = [r for r in rows if not (ROUTERDC_SOURCE in r["source_url"]
                                    and r["benchmark"] == FIGURE_BENCHMARK.get(benchmark))]
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(kept)
    return out


def train_without(benchmark: str, folder: Path, keep_figures: bool) -> Path:
    folder.mkdir(parents=True)
    for name in ENCODER_FILES:
        shutil.copy2(DEFAULT_ARTEFACT_DIR / name, folder / name)
    figures = DEFAULT_PRIOR_PATH if keep_figures else masked_figures(benchmark, folder / "model_benchmarks.csv")
    train_default_router(SHARED / "routellm", folder, prior_path=figures, routerdc_dir=SHARED / "routerdc",
                         leave_out=(benchmark,))
    return figures


def sample(n: int, limit: int) -> np.ndarray:
    """A fixed spread of at most `limit` of n rows (every k-th), so large benchmarks stay a few minutes."""
    return np.arange(n) if n <= limit else np.linspace(0, n - 1, limit).round().astype(int)


def pair_figures(api, prompts: list[str], strong: np.ndarray, weak: np.ndarray) -> dict:
    choose = route_all(api.base, api.headers, prompts)
    w, s = float(weak.mean()), float(strong.mean())
    shares = choose.mean(axis=1)
    return {"items": len(prompts), "apgr": summarize(curve_from_choices(choose, strong, weak), w, s).apgr,
            "oracle": summarize(oracle_curve(strong, weak), w, s).apgr,
            "largest_step": float(np.max(np.abs(np.diff(shares)))), "shares": [round(float(x), 2) for x in shares]}


def custom(model: str) -> dict:
    return {"provider": "huggingface", "model": model, "is_custom": True, "context_length": 32768,
            "input_price": 0.2, "output_price": 0.2, "latency": 1.0}


def many_figures(api, o: Outcomes) -> dict:
    candidates = [custom(m) for m in o.models]
    picks = np.zeros(len(o.prompts), dtype=int)

    def one(i: int, client: httpx.Client) -> None:
        r = client.post(f"{api.base}/v2/modelRouter/modelSelect", headers=api.headers,
                        json={"messages": [{"role": "user", "content": o.prompts[i]}], "llm_providers": candidates})
        r.raise_for_status()
        picks[i] = o.models.index(r.json()["providers"][0]["model"])

    with httpx.Client(timeout=30, limits=httpx.Limits(max_connections=8)) as client, \
            ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda i: one(i, client), range(len(o.prompts))))
    scores = np.nan_to_num(o.scores)
    singles = scores.mean(axis=0)
    return {"items": len(o.prompts), "router": float(scores[np.arange(len(picks)), picks].mean()),
            "best_single": float(singles.max()), "best_single_model": o.models[int(singles.argmax())]}


def report(label: str, figures: dict) -> None:
    if "apgr" in figures:
        print(f"{label:<34} {figures['items']:>6}  APGR {figures['apgr']:.3f} (oracle {figures['oracle']:.3f})  "
              f"largest step {figures['largest_step']:.2f}  shares {figures['shares']}", flush=True)
    else:
        gain = 100 * (figures["router"] - figures["best_single"])
        print(f"{label:<34} {figures['items']:>6}  accuracy {figures['router']:.4f} vs best single "
              f"{figures['best_single']:.4f} ({figures['best_single_model'].split('/')[-1]}): {gain:+.2f} points",
              flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="benchmarks to leave out, comma-separated")
    parser.add_argument("--pair-sample", type=int, default=3000, help="at most this many prompts of a pair set")
    parser.add_argument("--keep-figures", action="store_true",
                        help="keep the figures measured on the left-out benchmark's RouterDC file")
    args = parser.parse_args()
    sets = outcome_sets(SHARED / "routellm", SHARED / "routerdc")
    pairs = load_all(SHARED / "routellm")
    unseen_apgr, steps, many = [], [], []
    work = Path(tempfile.mkdtemp(prefix="switchboard-unseen-"))
    try:
        for benchmark in [b for b in args.only.split(",") if b]:
            started = time.perf_counter()
            folder = work / benchmark
            figures = train_without(benchmark, folder, args.keep_figures)
            env = {"SWITCHBOARD_DEFAULT_ROUTER_DIR": str(folder), "SWITCHBOARD_MODEL_FIGURES": str(figures)}
            with running_api(env) as api:
                if benchmark in pairs:
                    items = pairs[benchmark]
                    idx = sample(len(items.prompts), args.pair_sample)
                    got = pair_figures(api, [items.prompts[i] for i in idx], items.strong[idx], items.weak[idx])
                    report(f"{benchmark} left out, GPT-4 vs Mixtral", got)
                    unseen_apgr.append(got["apgr"])
                    steps.append(got["largest_step"])
                if f"routerdc/{benchmark}" in sets:
                    got = many_figures(api, sets[f"routerdc/{benchmark}"])
                    report(f"{benchmark} left out, 7 open models", got)
                    many.append(got["router"] > got["best_single"])
            print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
        with running_api() as api:  # the shipped router
            mt = pairs["mt_bench"]
            got = pair_figures(api, mt.prompts, mt.strong, mt.weak)
            report("MT-Bench (never trained on)", got)
            unseen_apgr.append(got["apgr"])
            steps.append(got["largest_step"])
            got = many_figures(api, sets["routerdc/cmmlu"])
            report("CMMLU (never trained on), 7 models", got)
            many.append(got["router"] > got["best_single"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"pooled APGR on pair benchmarks never trained on: {np.mean(unseen_apgr):.3f} (target >= 0.60); "
          f"largest step of the dial: {max(steps):.2f} (target <= 0.25); "
          f"7-model sets above the best single model: {sum(many)} of {len(many)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
