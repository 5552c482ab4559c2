"""Routing-engine latency: microseconds per decision, in process, no HTTP.

    .venv/bin/python -m benchmarks.routing_engine_latency [--n 2000] [--chars 2000] [--candidates 10]

One decision = routing text -> features (static embedding + hand features) -> default router scores for 10
catalogue-style candidates -> cost estimate -> policy choice. Token counting (needed for context-window
eligibility, done by the web layer) is timed on its own line. Each iteration uses a different 2,000-character
prompt so nothing is served from a cache.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from api.routing import policy
from api.routing.default_router import load_default_router
from api.routing.router import Candidate
from api.routing.text import count_tokens

CANDIDATES = [
    Candidate("openai", "gpt-4o", 2.5, 10.0, 128000),
    Candidate("openai", "gpt-4o-mini", 0.15, 0.6, 128000),
    Candidate("openai", "gpt-4.1", 2.0, 8.0, 1047576),
    Candidate("openai", "o3-mini", 1.1, 4.4, 200000),
    Candidate("anthropic", "claude-sonnet-4-5", 3.0, 15.0, 200000),
    Candidate("anthropic", "claude-haiku-4-5", 1.0, 5.0, 200000),
    Candidate("google", "gemini-2.5-flash", 0.3, 2.5, 1048576),
    Candidate("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1", 0.6, 0.6, 32768),
    Candidate("togetherai", "meta-llama/Llama-3.3-70B-Instruct-Turbo", 1.04, 1.04, 131072),
    Candidate("deepseek", "deepseek-chat", 0.28, 0.42, 131072),
]

WORDS = (
    "the model should explain why a binary search tree keeps its keys ordered and how to rebalance it after "
    "insertion compute 17 * 23 + 4 = ? then write a python function def merge(a, b): return sorted(a + b) "
    "history of the roman empire economic policy inflation rate derivative integral probability theorem proof"
).split()


def make_prompt(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:chars]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> int:
    parser = argparse.ArgumentParser(description="routing engine latency")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--chars", type=int, default=2000)
    parser.add_argument("--candidates", type=int, default=10)
    args = parser.parse_args()

    started = time.perf_counter()
    router = load_default_router()
    load_ms = (time.perf_counter() - started) * 1e3
    count_tokens("warm up the tokenizer")
    cands = (CANDIDATES * ((args.candidates // len(CANDIDATES)) + 1))[: args.candidates]
    price_in = np.array([c.input_price for c in cands])
    price_out = np.array([c.output_price for c in cands])
    rng = random.Random(0)
    prompts = [make_prompt(rng, args.chars) for _ in range(args.n + 100)]

    featurize, score, decide, total, tokens = [], [], [], [], []
    for i, text in enumerate(prompts):
        t0 = time.perf_counter_ns()
        n_tokens = count_tokens(text)
        t1 = time.perf_counter_ns()
        features = router.featurizer.featurize(text)
        t2 = time.perf_counter_ns()
        quality = router.predict_quality(features, cands)
        t3 = time.perf_counter_ns()
        cost = policy.request_cost_usd(price_in, price_out, n_tokens)
        policy.choose(quality, cost, cost_quality_tradeoff=i % 11, schedule=router.schedule)
        t4 = time.perf_counter_ns()
        if i >= 100:  # warm-up excluded
            tokens.append((t1 - t0) / 1e3)
            featurize.append((t2 - t1) / 1e3)
            score.append((t3 - t2) / 1e3)
            decide.append((t4 - t3) / 1e3)
            total.append((t4 - t1) / 1e3)

    print(f"default router load: {load_ms:.0f} ms")
    print(f"{args.n} decisions, {args.chars}-char prompts, {len(cands)} candidates (microseconds)")
    print(f"{'step':<34} {'p50':>8} {'p90':>8} {'p99':>8}")
    for label, values in [
        ("featurise (embedding + hand)", featurize),
        ("score candidates (IRT)", score),
        ("cost + policy", decide),
        ("decision total", total),
        ("count_tokens (eligibility, extra)", tokens),
    ]:
        print(f"{label:<34} {pct(values, 50):>8.1f} {pct(values, 90):>8.1f} {pct(values, 99):>8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
