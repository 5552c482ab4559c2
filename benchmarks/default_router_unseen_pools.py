"""The default router on pools of models it never trained on, named as custom models with list prices, through HTTP.

    .venv/bin/python -m benchmarks.default_router_unseen_pools [--prompts 200] [--sources mmlu_pro,crux,math_l5]
        [--router-dir DIR] [--keep-math] [--keep-own-figures] [--offline [--uncertainty-z Z]]

Pools: the per-question 0/1 results in ../shared/data (MMLU-Pro's non-MMLU questions, 29 models; ZeroEval CRUX, 51;
ZeroEval MATH level 5, 41; data cards there). The shipped router trained on GPT-4-1106 / Mixtral-8x7B (RouteLLM) and
RouterDC's seven 7-8B models only, none of these runs. Each source's models, sorted by name, are dealt into
ceil(N / 9) pools of about 9 (pool k = every ceil(N / 9)-th model from the k-th): a fixed rule, no pool picked by
its result. Rows: the questions every model of the source answered, a fixed spread of --prompts of them.

Each pool goes to modelSelect as custom models (provider 'huggingface', the model named as in the data) priced by
price_of below, every prompt at cost_quality_tradeoff 0..10 under one preference per pool. The figures the router
may use leave out the pool's own benchmark: scoring MMLU-Pro pools, every MMLU-Pro row of the figures file is
dropped (CRUX and MATH-L5 likewise; for MATH-L5 also MATH, whose test set holds its questions, unless --keep-math),
as benchmarks/default_router_unseen.py masks a left-out benchmark's figures; published figures on other benchmarks
stay, as they would for any real model.

Cost of a request: prompt tokens (characters / 4) x input price + OUTPUT_TOKENS x output price (the data have no
answer lengths). Printed per pool: the best single model on the routed prompts, accuracy at t = 0, and the cheapest
setting within 2 points of the best single model with its cost as a share of always calling that model; then the
means over pools, also over the even- and odd-numbered pools of each source (choose a constant on one half, report
on the other). --offline scores t = 0 only, in process (the served router's predict_quality_batch and the real
policy; the same choices as through HTTP, where t = 0 does not depend on the dial), fast enough to try constants:
--uncertainty-z sets api/routing/capability.py's UNCERTAINTY_Z for the run. --router-dir
(SWITCHBOARD_DEFAULT_ROUTER_DIR) serves another router artefact, e.g. one trained without the pool's models.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np

from api.catalogue import load_catalogue
from api.routing import capability, policy
from api.routing.default_router import DEFAULT_PRIOR_PATH, load_default_router
from api.routing.router import Candidate
from benchmarks.default_router_quality_http import new_preference
from benchmarks.default_router_unseen import sample
from tests.support.service import running_api

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
POOL_SIZE = 9
OUTPUT_TOKENS = 300
WITHIN_POINTS = 2.0
# source -> (per-question file, the figures' benchmark name measured on it)
SOURCES = {"mmlu_pro": ("mmlu_pro/mmlu_pro_nonmmlu.csv", "MMLU-Pro"), "crux": ("zeroeval/crux.csv", "CRUX"),
           "math_l5": ("zeroeval/math_l5.csv", "MATH-L5")}
# Figures measured on the same questions under another name: MATH (MATH-500 for the newer models) holds the level-5
# questions MATH-L5 routes, so scoring MATH-L5 pools drops it too unless --keep-math.
SAME_ITEMS = {"MATH-L5": ("MATH",)}
NOT_MODELS = {"question_id", "category", "src", "prompt", "answer", "revised", "id"}

# Prices, USD per million tokens (input, output). 1. the catalogue's entry (LiteLLM's price map bundled in
# api/catalogue) of the same model or, for a base or differently served model, of the hosted model it maps to:
PRICED_AS = {
    "gpt-4o-2024-08-06": ("openai", "gpt-4o-2024-08-06"), "gpt-4o-2024-05-13": ("openai", "gpt-4o-2024-05-13"),
    "chatgpt-4o-latest-24-09-07": ("openai", "gpt-4o-2024-05-13"),
    "gpt-4o-mini-2024-07-18": ("openai", "gpt-4o-mini-2024-07-18"),
    "gpt-4-turbo-2024-04-09": ("openai", "gpt-4-turbo-2024-04-09"), "gpt-4-0314": ("openai", "gpt-4-0613"),
    "gpt-3.5-turbo-0125": ("openai", "gpt-3.5-turbo-0125"), "jamba-1.5-large": ("ai21", "jamba-1.5-large"),
    "c4ai-command-r-v01": ("cohere", "command-r-08-2024"),
    "deepseek-v2-chat-0628": ("deepseek", "deepseek-chat"), "deepseek-v2.5-0908": ("deepseek", "deepseek-chat"),
    "deepseek-v2-coder-0724": ("deepseek", "deepseek-coder"), "DeepSeek-Coder-V2": ("deepseek", "deepseek-coder"),
    "Mistral-Large-2": ("mistral", "mistral-large-latest"), "gemma-2-27b-it": ("togetherai", "google/gemma-2-27b-it"),
    "gemma-2-9b-it": ("google", "gemini-gemma-2-9b-it"), "Llama-2-70b-hf": ("perplexity", "llama-2-70b-chat"),
    "Qwen2.5-72B-Instruct": ("togetherai", "Qwen/Qwen2.5-72B-Instruct"),
    "Qwen2-72B-Instruct": ("togetherai", "Qwen/Qwen2-72B-Instruct"),
    "Qwen2.5-7B-Instruct": ("togetherai", "Qwen/Qwen2.5-7B-Instruct-Turbo"),
    "Meta-Llama-3-70B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3-70B-Instruct-Turbo"),
    "Meta-Llama-3-8B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3-8B-Instruct"),
    "Meta-Llama-3.1-70B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo"),
    "Meta-Llama-3_1-70B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo"),
    "Meta-Llama-3.1-8B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo"),
    "Meta-Llama-3_1-8B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo"),
    "Llama-3.1-405B-Inst-fp8": ("togetherai", "meta-llama/Llama-3.1-405B-Instruct"),
    "Llama-3.1-405B-Inst@sambanova": ("togetherai", "meta-llama/Llama-3.1-405B-Instruct"),
    "Meta-Llama-3.1-405B-Instruct@hyperbolic": ("togetherai", "meta-llama/Llama-3.1-405B-Instruct"),
    "Mixtral-8x7B-Instruct-v0.1": ("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
    "Mistral-7B-Instruct-v0.1": ("togetherai", "mistralai/Mistral-7B-Instruct-v0.1"),
    "Mistral-7B-Instruct-v0.2": ("togetherai", "mistralai/Mistral-7B-Instruct-v0.3"),
}
# 2. API models the catalogue lacks: the provider's list price at the model's release (input, output).
LIST_PRICE = {
    "o1-preview-2024-09-12": (15.0, 60.0), "o1-mini-2024-09-12": (3.0, 12.0),
    "claude-3-5-sonnet-20241022": (3.0, 15.0), "claude-3-5-sonnet-20240620": (3.0, 15.0),
    "claude-3-opus-20240229": (15.0, 75.0), "claude-3-sonnet-20240229": (3.0, 15.0),
    "claude-3-haiku-20240307": (0.25, 1.25), "claude-3-5-haiku-20241022": (0.8, 4.0),
    "gemini-1.5-pro": (1.25, 5.0), "gemini-1.5-pro-002": (1.25, 5.0), "gemini-1.5-pro-exp-0827": (1.25, 5.0),
    "gemini-1.5-pro-exp-0801": (1.25, 5.0), "gemini-1.5-flash": (0.075, 0.3), "gemini-1.5-flash-002": (0.075, 0.3),
    "gemini-1.5-flash-exp-0827": (0.075, 0.3), "grok-2-1212": (2.0, 10.0), "yi-large": (3.0, 3.0),
    "yi-large-preview": (3.0, 3.0), "reka-core-20240501": (3.0, 15.0), "reka-flash-20240226": (0.8, 2.0),
}
# 3. open models otherwise: a hosted price by size class (billions of parameters, upper bound), together.ai-like.
SIZE_CLASS = ((4, 0.06), (9, 0.2), (15, 0.3), (35, 0.8), (75, 0.9), (130, 1.2), (math.inf, 3.5))


def parameters_b(model: str) -> float:
    """Billions of parameters from the name: '8x7B' -> 56, '70B' -> 70, 'mini' (Phi-3) -> 3.8."""
    m = model.lower()
    moe = re.search(r"(\d+)x(\d+(?:\.\d+)?)b", m)
    if moe:
        return float(moe.group(1)) * float(moe.group(2))
    size = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)b(?![a-z])", m)
    if size:
        return float(size.group(1))
    if "mini" in m:
        return 3.8
    raise ValueError(f"no price rule for {model}")


def price_of(model: str) -> tuple[float, float]:
    if model in PRICED_AS:
        entry = load_catalogue().get(*PRICED_AS[model])
        assert entry is not None, PRICED_AS[model]
        return entry.input_price, entry.output_price
    if model in LIST_PRICE:
        return LIST_PRICE[model]
    size = parameters_b(model)
    price = next(p for bound, p in SIZE_CLASS if size <= bound)
    return price, price


def load_source(source: str) -> tuple[list[str], list[str], np.ndarray]:
    """(prompts, models, 0/1 results (n, m)) of the rows every model answered."""
    path = SHARED / SOURCES[source][0]
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        models = [c for c in reader.fieldnames if c not in NOT_MODELS]
        prompts, rows = [], []
        for r in reader:
            if source == "mmlu_pro" and r["revised"] == "1":
                continue  # the data card's advice: cleanest labels
            if all(r[m] != "" for m in models):
                prompts.append(r["prompt"])
                rows.append([float(r[m]) for m in models])
    return prompts, models, np.array(rows)


def pools_of(models: list[str]) -> list[list[str]]:
    ordered = sorted(models, key=str.lower)
    n = math.ceil(len(ordered) / POOL_SIZE)
    return [ordered[k::n] for k in range(n)]


def masked_figures(benchmarks: tuple[str, ...], out: Path, figures: Path = DEFAULT_PRIOR_PATH) -> Path:
    """A copy of the figures without any row measured on one of `benchmarks`."""
    with figures.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, [r for r in reader if r["benchmark"] not in benchmarks]
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out


def route_pool(api, prompts: list[str], pool: list[str]) -> np.ndarray:
    """(11, n) index into `pool` of the model chosen at each setting for each prompt."""
    preference = new_preference(api.base, api.headers)
    candidates = []
    for m in pool:
        inp, out = price_of(m)
        candidates.append({"provider": "huggingface", "model": m, "is_custom": True, "context_length": 32768,
                           "input_price": inp, "output_price": out, "latency": 1.0})
    picks = np.zeros((11, len(prompts)), dtype=int)

    def one(job: tuple[int, int], client: httpx.Client) -> None:
        t, i = job
        r = client.post(f"{api.base}/v2/modelRouter/modelSelect", headers=api.headers,
                        json={"messages": [{"role": "user", "content": prompts[i]}], "llm_providers": candidates,
                              "cost_quality_tradeoff": t, "preference_id": preference})
        r.raise_for_status()
        picks[t, i] = pool.index(r.json()["providers"][0]["model"])

    jobs = [(t, i) for t in range(11) for i in range(len(prompts))]
    with httpx.Client(timeout=60, limits=httpx.Limits(max_connections=4)) as client, \
            ThreadPoolExecutor(max_workers=4) as threads:
        list(threads.map(lambda job: one(job, client), jobs))
    return picks


def route_pool_offline(router, vectors: np.ndarray, prompts: list[str], pool: list[str]) -> np.ndarray:
    """(1, n) index into `pool` of the model chosen at t = 0, in process."""
    candidates = [Candidate("huggingface", m, *price_of(m), context_length=32768, latency_s=1.0) for m in pool]
    quality = router.predict_quality_batch(vectors, candidates)
    prices = np.array([price_of(m) for m in pool])
    picks = [policy.choose(quality[i], policy.request_cost_usd(prices[:, 0], prices[:, 1], len(p) // 4,
                                                               OUTPUT_TOKENS), cost_quality_tradeoff=0).index
             for i, p in enumerate(prompts)]
    return np.array([picks])


def pool_figures(prompts: list[str], pool: list[str], results: np.ndarray, picks: np.ndarray) -> dict:
    """Accuracy and cost share per setting against the pool's best single model on these prompts."""
    prices = np.array([price_of(m) for m in pool])
    tokens = np.array([len(p) / 4 for p in prompts])
    cost = (tokens[:, None] * prices[None, :, 0] + OUTPUT_TOKENS * prices[None, :, 1]) / 1e6  # (n, m)
    singles = results.mean(axis=0)
    best = int(singles.argmax())
    rows = np.arange(len(prompts))
    settings = range(len(picks))  # 11, or t = 0 alone offline
    accuracy = np.array([results[rows, picks[t]].mean() for t in settings])
    share = np.array([cost[rows, picks[t]].sum() / cost[:, best].sum() for t in settings])
    within = [t for t in settings if 100 * (accuracy[t] - singles[best]) >= -WITHIN_POINTS]
    cheapest = min(within, key=lambda t: share[t]) if within else None
    return {"best_model": pool[best], "best": float(singles[best]), "accuracy": accuracy, "share": share,
            "cheapest": cheapest, "t0_model_share": np.bincount(picks[0], minlength=len(pool)) / len(prompts)}


def report(source: str, k: int, pool: list[str], prompts: list[str], got: dict) -> None:
    acc, share, c = got["accuracy"], got["share"], got["cheapest"]
    top = np.argsort(-got["t0_model_share"])[:2]
    print(f"{source} pool {k} ({len(pool)} models, {len(prompts)} prompts): best single "
          f"{got['best']:.3f} ({got['best_model']}); t=0 {acc[0]:.3f} "
          f"({100 * (acc[0] - got['best']):+.1f} pts, cost {share[0]:.0%}; mostly "
          + ", ".join(f"{pool[j]} {got['t0_model_share'][j]:.0%}" for j in top) + "); "
          + (f"cheapest within {WITHIN_POINTS:g} pts: t={c} {acc[c]:.3f} at {share[c]:.0%} of its cost"
             if c is not None else f"never within {WITHIN_POINTS:g} pts"), flush=True)
    if len(acc) > 1:
        print("    accuracy t=0..10: " + " ".join(f"{a:.3f}" for a in acc)
              + " | cost share: " + " ".join(f"{s:.2f}" for s in share), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=200, help="prompts routed per pool (a fixed spread)")
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument("--router-dir", default=None, help="router artefact to serve (SWITCHBOARD_DEFAULT_ROUTER_DIR)")
    parser.add_argument("--figures", default=str(DEFAULT_PRIOR_PATH), help="figures file to mask and serve")
    parser.add_argument("--keep-own-figures", action="store_true",
                        help="keep the pool's own benchmark figures (a leak: they are the models' accuracy on these "
                             "very rows; shows what name matching finds, not generalisation)")
    parser.add_argument("--keep-math", action="store_true",
                        help="keep the MATH figures when scoring MATH-L5 pools (MATH contains their questions)")
    parser.add_argument("--offline", action="store_true", help="t = 0 only, scored in process")
    parser.add_argument("--uncertainty-z", type=float, default=None,
                        help="with --offline: UNCERTAINTY_Z of api/routing/capability.py for this run")
    args = parser.parse_args()
    if args.uncertainty_z is not None:
        if not args.offline:
            parser.error("--uncertainty-z needs --offline (the HTTP server loads its own router)")
        capability.UNCERTAINTY_Z = args.uncertainty_z
    work = Path(tempfile.mkdtemp(prefix="switchboard-pools-"))
    summary = []
    try:
        for source in [s for s in args.sources.split(",") if s]:
            prompts, models, results = load_source(source)
            idx = sample(len(prompts), args.prompts)
            prompts, results = [prompts[i] for i in idx], results[idx]
            benchmark = SOURCES[source][1]
            dropped = () if args.keep_own_figures else (
                (benchmark,) + (() if args.keep_math else SAME_ITEMS.get(benchmark, ())))
            masked = masked_figures(dropped, work / f"{source}.csv", Path(args.figures))
            if args.offline:
                router = load_default_router(args.router_dir, masked)
                vectors = router.featurizer.featurize_batch(prompts)
                for k, pool in enumerate(pools_of(models)):
                    cols = [models.index(m) for m in pool]
                    got = pool_figures(prompts, pool, results[:, cols],
                                       route_pool_offline(router, vectors, prompts, pool))
                    summary.append((source, k, got))
                    report(source, k, pool, prompts, got)
                continue
            env = {"SWITCHBOARD_MODEL_FIGURES": str(masked)}
            if args.router_dir:
                env["SWITCHBOARD_DEFAULT_ROUTER_DIR"] = str(Path(args.router_dir).resolve())
            with running_api(env) as api:
                for k, pool in enumerate(pools_of(models)):
                    cols = [models.index(m) for m in pool]
                    got = pool_figures(prompts, pool, results[:, cols], route_pool(api, prompts, pool))
                    summary.append((source, k, got))
                    report(source, k, pool, prompts, got)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for name, part in (("all", summary), ("even-numbered", [x for x in summary if x[1] % 2 == 0]),
                       ("odd-numbered", [x for x in summary if x[1] % 2 == 1])):
        got = [g for _, _, g in part]
        t0 = np.array([g["accuracy"][0] for g in got])
        best = np.array([g["best"] for g in got])
        gap = 100 * (t0 - best)
        line = (f"{name} pools ({len(got)}): mean accuracy at t=0 {t0.mean():.3f} vs best single {best.mean():.3f} "
                f"({gap.mean():+.2f} pts; worst {gap.min():+.1f}); within {WITHIN_POINTS:g} pts at t=0 in "
                f"{int(np.sum(gap >= -WITHIN_POINTS))}")
        if not args.offline:
            reached = [g for g in got if g["cheapest"] is not None]
            half = sum(1 for g in reached if g["share"][g["cheapest"]] <= 0.5)
            line += (f"; within {WITHIN_POINTS:g} pts somewhere in {len(reached)}, at <= 50 % of the best model's "
                     f"cost in {half}")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
