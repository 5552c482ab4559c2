"""How the default router does on benchmarks and models it never saw: leave one benchmark out, leave models out.

    .venv/bin/python -m benchmarks.default_router_unseen [--only mmlu,crux] [--groups] [--http] [--keep-figures]

1. Leave one benchmark out, for each benchmark the router trains on (MMLU, GSM8K, ARC-Challenge, HumanEval, MMLU-Pro,
   CRUX, MATH level 5): train the default router without it, every source's copy left out
   (flows/default_router/train.py leave_out), and every figure in datasets/model_benchmarks.csv measured on that
   benchmark's own data removed too, so nothing about it reaches the router. Then route every row of it (offline,
   the served router's predict_quality_batch and the real trade-off policy):
   - GPT-4-1106 vs Mixtral-8x7B (RouteLLM's MMLU, GSM8K): APGR as RouteLLM computes it, accuracy at t=0 against the
     best single model (GPT-4), and the cheapest setting of the dial within 1 point of it (its cost as a share of
     always GPT-4, equal tokens per prompt);
   - the set's own model pool (RouterDC's 7, MMLU-Pro's 29, CRUX's 49, MATH's 41, equal prices: quality decides):
     accuracy of the chosen model at t=0 against the best single model of the pool on that benchmark, over the rows
     every model ran. Without prices "the cheapest setting within 1 point" is the t=0 one or none.
2. Leave models out (--groups): train without two groups of models' outcomes (leave_out_models; their figures stay:
   a real unseen model may have published figures) and route each group as a pool on the held-out fold of every set
   that has at least two of them.
3. The pooled GPT-4 vs Mixtral APGR on kinds never trained on: the MMLU-left-out and GSM8K-left-out routers on their
   pair sets, and the shipped router on MT-Bench; with --http those go through modelSelect (the served path).
With --keep-figures the figures stay in step 1 (the router knows each model's public score on the left-out benchmark).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from api.routing.default_router import DEFAULT_ARTEFACT_DIR, DEFAULT_PRIOR_PATH, load_default_router
from benchmarks.default_router_quality_http import route_all
from flows.default_router.data import load_all
from flows.default_router.multi import Outcomes
from flows.default_router.pair_irt import PAIR
from flows.default_router.report import many_models
from flows.default_router.shared_sets import model_key
from flows.default_router.skill_training import BENCHMARKS, featurize_sets, outcome_sets
from flows.default_router.sweep import STRONG_PRICE, WEAK_PRICE, tradeoff_choices
from flows.default_router.train import train_default_router
from flows.evaluation import curve_from_choices, oracle_curve, summarize
from tests.support.service import running_api

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
FIGURE_BENCHMARK = {"mmlu": "MMLU", "gsm8k": "GSM8K", "humaneval": "HumanEval"}
ROUTERDC_SOURCE = "shuhao02/RouterDC"  # figures measured on RouterDC's own files (datasets/model_benchmarks.csv)
# Figures measured on the new sets' own data (their origin in the source URL, the benchmark named in its column).
OWN_DATA = {"mmlu_pro": ("MMLU-Pro", "MMLU-Pro"), "crux": ("ZeroEval", "CRUX"), "math_l5": ("ZeroEval", "MATH")}
ENCODER_FILES = ("encoder.json", "static_embedding.npy", "tokenizer.json", "calibration_pool.jsonl")
GROUPS = {  # leave-models-out pools: open chat models of ZeroEval, open base / chat models of MMLU-Pro
    "ZeroEval open models": ("huggingface/Qwen/Qwen2.5-72B-Instruct", "huggingface/Qwen/Qwen2.5-7B-Instruct",
                             "huggingface/google/gemma-2-27b-it", "huggingface/google/gemma-2-9b-it",
                             "huggingface/meta-llama/Meta-Llama-3.1-70B-Instruct",
                             "huggingface/meta-llama/Meta-Llama-3.1-8B-Instruct",
                             "huggingface/microsoft/Phi-3.5-mini-instruct", "huggingface/01-ai/Yi-1.5-34B-Chat"),
    "MMLU-Pro open models": ("huggingface/meta-llama/Llama-2-70b-hf", "huggingface/meta-llama/Llama-2-13b-hf",
                             "huggingface/01-ai/Yi-34B", "huggingface/01-ai/Yi-6B", "huggingface/Qwen/Qwen1.5-110B",
                             "huggingface/Qwen/Qwen1.5-7B-Chat", "huggingface/google/gemma-7b",
                             "huggingface/mistralai/mathstral-7B"),
}
STRONG_COST, WEAK_COST = sum(STRONG_PRICE), sum(WEAK_PRICE)


def masked_figures(benchmark: str, out: Path) -> Path:
    """A copy of the figures without those measured on the left-out benchmark's own RouterDC file."""
    with DEFAULT_PRIOR_PATH.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    origin, name = OWN_DATA.get(benchmark, (None, None))
    kept = [r for r in rows if not (ROUTERDC_SOURCE in r["source_url"] and r["benchmark"] == FIGURE_BENCHMARK.get(benchmark))
            and not (origin and origin in r["source_url"] and name in r["benchmark"])]
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(kept)
    return out


def train_without(folder: Path, benchmark: str | None = None, keep_figures: bool = False,
                  models: tuple[str, ...] = ()) -> Path:
    folder.mkdir(parents=True)
    for name in ENCODER_FILES:
        shutil.copy2(DEFAULT_ARTEFACT_DIR / name, folder / name)
    figures = (DEFAULT_PRIOR_PATH if keep_figures or benchmark is None
               else masked_figures(benchmark, folder / "model_benchmarks.csv"))
    train_default_router(SHARED / "routellm", folder, prior_path=figures, routerdc_dir=SHARED / "routerdc",
                         leave_out=(benchmark,) if benchmark else (), leave_out_models=models)
    return figures


def pair_offline(router, X: np.ndarray, strong: np.ndarray, weak: np.ndarray) -> dict:
    """GPT-4 vs Mixtral through the real policy at t = 0..10: APGR, accuracy at t=0 against always GPT-4, and the
    cheapest setting within 1 point of it (cost share of always GPT-4)."""
    choose = tradeoff_choices(router.predict_quality_batch(X, PAIR), router.schedule)  # (11, n), 1 = GPT-4
    w, s = float(weak.mean()), float(strong.mean())
    accuracy = (choose * strong[None, :] + (1 - choose) * weak[None, :]).mean(axis=1)
    share = choose.mean(axis=1)
    cost = (share * STRONG_COST + (1 - share) * WEAK_COST) / STRONG_COST
    best = max(s, w)
    within = [t for t in range(len(accuracy)) if accuracy[t] >= best - 0.01]
    cheapest = min(within, key=lambda t: cost[t]) if within else None
    return {"items": len(strong), "apgr": summarize(curve_from_choices(choose, strong, weak), w, s).apgr,
            "oracle": summarize(oracle_curve(strong, weak), w, s).apgr, "t0": float(accuracy[0]), "best": best,
            "cheapest": cheapest, "cheapest_cost": None if cheapest is None else float(cost[cheapest]),
            "largest_step": float(np.max(np.abs(np.diff(share)))), "shares": [round(float(x), 2) for x in share]}


def pool_offline(router, X: np.ndarray, o: Outcomes, rows: np.ndarray, models: tuple[str, ...] | None = None) -> dict:
    """Accuracy at t=0 (equal prices: the highest predicted quality) of a pool of the set's models against the best
    single model of the pool, over the rows every pool model ran."""
    columns = [j for j, m in enumerate(o.models) if models is None or model_key(m) in models]
    scores = o.scores[np.ix_(rows, columns)]
    complete = ~np.isnan(scores).any(axis=1)
    scores = scores[complete]
    pool = [many_models(o)[j] for j in columns]
    picks = router.predict_quality_batch(X[rows][complete], pool).argmax(axis=1)
    singles = scores.mean(axis=0)
    return {"items": len(scores), "pool": len(columns), "router": float(scores[np.arange(len(picks)), picks].mean()),
            "best_single": float(singles.max()), "best_single_model": model_key(o.models[columns[int(singles.argmax())]])}


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


def report(label: str, figures: dict) -> None:
    if "apgr" in figures:
        extra = ""
        if "t0" in figures:
            cheapest = (f"t={figures['cheapest']} at {100 * figures['cheapest_cost']:.0f} % of GPT-4's cost"
                        if figures["cheapest"] is not None else "none")
            extra = (f"  t=0 {figures['t0']:.4f} vs best single {figures['best']:.4f} "
                     f"({100 * (figures['t0'] - figures['best']):+.2f} points); cheapest within 1 point: {cheapest}")
        print(f"{label:<40} {figures['items']:>6}  APGR {figures['apgr']:.3f} (oracle {figures['oracle']:.3f})  "
              f"largest step {figures['largest_step']:.2f}{extra}", flush=True)
    else:
        gain = 100 * (figures["router"] - figures["best_single"])
        pool = f"{figures['pool']} models, " if "pool" in figures else ""
        print(f"{label:<40} {figures['items']:>6}  {pool}accuracy at t=0 {figures['router']:.4f} vs best single "
              f"{figures['best_single']:.4f} ({figures['best_single_model'].split('/')[-1]}): {gain:+.2f} points",
              flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHMARKS), help="benchmarks to leave out, comma-separated")
    parser.add_argument("--groups", action="store_true", help="also leave the model groups out (GROUPS)")
    parser.add_argument("--http", action="store_true", help="the pair figures through modelSelect (served path)")
    parser.add_argument("--pair-sample", type=int, default=3000, help="with --http: at most this many pair prompts")
    parser.add_argument("--keep-figures", action="store_true",
                        help="keep the figures measured on the left-out benchmark's own data")
    args = parser.parse_args()
    sets = outcome_sets(SHARED / "routellm", SHARED / "routerdc")
    pairs = load_all(SHARED / "routellm")
    shipped = load_default_router()
    features = featurize_sets(shipped.featurizer, sets)
    unseen_apgr, below = [], []
    work = Path(tempfile.mkdtemp(prefix="switchboard-unseen-"))
    try:
        for benchmark in [b for b in args.only.split(",") if b]:
            started = time.perf_counter()
            folder = work / benchmark
            figures = train_without(folder, benchmark, args.keep_figures)
            router = load_default_router(folder, prior_path=figures)
            for key, o in sets.items():
                if key.split("/", 1)[1] != benchmark:
                    continue
                if o.source == "routellm":
                    items = pairs[benchmark]
                    if args.http:
                        env = {"SWITCHBOARD_DEFAULT_ROUTER_DIR": str(folder), "SWITCHBOARD_MODEL_FIGURES": str(figures)}
                        with running_api(env) as api:
                            idx = sample(len(items.prompts), args.pair_sample)
                            got = pair_figures(api, [items.prompts[i] for i in idx], items.strong[idx], items.weak[idx])
                    else:
                        got = pair_offline(router, features[key], items.strong, items.weak)
                        below.append(got["t0"] < got["best"])
                    report(f"{benchmark} left out, GPT-4 vs Mixtral", got)
                    unseen_apgr.append(got["apgr"])
                else:
                    got = pool_offline(router, features[key], o, np.ones(len(o.prompts), dtype=bool))
                    report(f"{benchmark} left out, {o.source}'s pool", got)
                    below.append(got["router"] < got["best_single"])
            print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
        if args.groups:
            for label, group in GROUPS.items():
                started = time.perf_counter()
                folder = work / label.replace(" ", "_")
                train_without(folder, models=group)
                router = load_default_router(folder)
                for key, o in sets.items():
                    if sum(model_key(m) in group for m in o.models) >= 2:
                        got = pool_offline(router, features[key], o, o.heldout, group)
                        report(f"{label} left out, {key} held-out fold", got)
                        below.append(got["router"] < got["best_single"])
                print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)
        mt = pairs["mt_bench"]
        if args.http:
            with running_api() as api:  # the shipped router
                got = pair_figures(api, mt.prompts, mt.strong, mt.weak)
        else:
            got = pair_offline(shipped, features["routellm/mt_bench"], mt.strong, mt.weak)
        report("MT-Bench (never trained on)", got)
        unseen_apgr.append(got["apgr"])
        got = pool_offline(shipped, features["routerdc/cmmlu"], sets["routerdc/cmmlu"],
                           np.ones(len(sets["routerdc/cmmlu"].prompts), dtype=bool))
        report("CMMLU (never trained on), 7 models", got)
        below.append(got["router"] < got["best_single"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"pooled APGR, GPT-4 vs Mixtral, on kinds never trained on: {np.mean(unseen_apgr):.3f} over "
          f"{len(unseen_apgr)} sets (target >= 0.62); below the best single model at t=0: {sum(below)} of {len(below)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
