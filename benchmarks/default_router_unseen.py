"""How the default router does on benchmarks it never trained on: leave one benchmark out, through the HTTP API.

    .venv/bin/python -m benchmarks.default_router_unseen [--only mmlu,gsm8k] [--pair-sample 3000] [--offline]

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
Each router trained here learns its own familiarity floor (flows/default_router/familiarity.py) on the benchmarks it
keeps, leaving each of those out in turn: nothing about the benchmark scored here chooses it. --offline scores in
process (the pair's APGR over RouteLLM's threshold sweep on the predicted gap instead of the dial, the 7 models'
choice at t = 0 through the same predictions), with and without the floor, and prints the level each router chose.
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

from api.routing.default_router import DEFAULT_ARTEFACT_DIR, DEFAULT_PRIOR_PATH, DefaultRouter, load_default_router
from benchmarks.default_router_quality_http import route_all
from flows.default_router.data import load_all
from flows.default_router.figures import masked_figures
from flows.default_router.multi import Outcomes
from flows.default_router.pair_irt import PAIR
from flows.default_router.report import many_models
from flows.default_router.skill_training import BENCHMARKS, outcome_sets
from flows.default_router.train import train_default_router
from flows.evaluation import curve_from_choices, oracle_curve, summarize, threshold_curve
from tests.support.service import running_api

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
ENCODER_FILES = ("encoder.json", "static_embedding.npy", "tokenizer.json", "calibration_pool.jsonl")


def train_without(benchmark: str, folder: Path, keep_figures: bool) -> Path:
    folder.mkdir(parents=True)
    for name in ENCODER_FILES:
        shutil.copy2(DEFAULT_ARTEFACT_DIR / name, folder / name)
    figures = (DEFAULT_PRIOR_PATH if keep_figures
               else masked_figures(DEFAULT_PRIOR_PATH, (benchmark,), folder / "model_benchmarks.csv"))
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


def offline_pair(router: DefaultRouter, prompts: list[str], strong: np.ndarray, weak: np.ndarray) -> dict:
    """The pair's APGR in process: RouteLLM's threshold sweep on the predicted GPT-4 - Mixtral gap."""
    q = router.predict_quality_batch(router.featurizer.featurize_batch(prompts), PAIR)
    w, s = float(weak.mean()), float(strong.mean())
    curve = threshold_curve(q[:, 0] - q[:, 1], strong, weak)
    return {"items": len(prompts), "apgr": summarize(curve, w, s).apgr,
            "oracle": summarize(oracle_curve(strong, weak), w, s).apgr, "largest_step": 0.1, "shares": []}


def offline_many(router: DefaultRouter, o: Outcomes) -> dict:
    """The 7 open models at t = 0 in process: the candidate of highest predicted quality."""
    picks = router.predict_quality_batch(router.featurizer.featurize_batch(o.prompts), many_models(o)).argmax(axis=1)
    scores = np.nan_to_num(o.scores)
    singles = scores.mean(axis=0)
    return {"items": len(o.prompts), "router": float(scores[np.arange(len(picks)), picks].mean()),
            "best_single": float(singles.max()), "best_single_model": o.models[int(singles.argmax())]}


def offline(router: DefaultRouter, label: str, pair, many: Outcomes | None, sample_size: int) -> tuple:
    """(pair APGR or None, whether the 7 models beat the best single) of one router, printed with and without its
    familiarity floor (the latter only to show what the floor did)."""
    record = router.familiarity.record if router.familiarity is not None else {}
    print(f"{label}: familiarity level {record.get('level', 'none')} (threshold {record.get('threshold')})",
          flush=True)
    apgr, above = None, None
    for name, r in (("floor", router), ("no floor", router.with_familiarity(None))):
        if pair is not None:
            idx = sample(len(pair.prompts), sample_size)
            got = offline_pair(r, [pair.prompts[i] for i in idx], pair.strong[idx], pair.weak[idx])
            report(f"  {name}: GPT-4 vs Mixtral", got)
            apgr = got["apgr"] if apgr is None else apgr
        if many is not None:
            got = offline_many(r, many)
            report(f"  {name}: 7 open models", got)
            above = got["router"] > got["best_single"] if above is None else above
    return apgr, above


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
    parser.add_argument("--offline", action="store_true", help="score in process instead of through the HTTP API")
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
            if args.offline:
                apgr, above = offline(load_default_router(folder, figures), f"{benchmark} left out",
                                      pairs.get(benchmark), sets.get(f"routerdc/{benchmark}"), args.pair_sample)
                unseen_apgr += [apgr] if apgr is not None else []
                many += [above] if above is not None else []
                steps.append(0.0)
                print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
                continue
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
        if args.offline:
            apgr, above = offline(load_default_router(), "shipped router: MT-Bench, CMMLU", pairs["mt_bench"],
                                  sets["routerdc/cmmlu"], len(pairs["mt_bench"].prompts))
            unseen_apgr.append(apgr)
            many.append(above)
        else:
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
    print(f"pooled APGR on pair benchmarks never trained on: {np.mean(unseen_apgr):.3f} (target >= 0.62); "
          f"largest step of the dial: {max(steps):.2f} (target <= 0.25); "
          f"7-model sets above the best single model: {sum(many)} of {len(many)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
