"""Offline quality benchmark of the committed default router (RouteLLM's APGR / CPT on held-out rows).

    .venv/bin/python -m benchmarks.default_router_quality [--data ../shared/data/routellm] [--json out.json]

Routes every held-out prompt between gpt-4-1106-preview and Mixtral-8x7B with the real policy at
cost_quality_tradeoff = 0..10 (11 operating points), and prints APGR, CPT(50%), CPT(80%) per benchmark beside the
random router, the oracle and RouteLLM's own 10-quantile threshold sweep of the same router scores.
Held-out rows: sha256(prompt) % 5 == 0 for MMLU and GSM8K (never trained on); every clean MT-Bench question (the
router never sees MT-Bench in training). The HTTP variant of this benchmark reuses flows.evaluation.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

from api.routing.default_router import load_default_router
from api.routing.router import Candidate
from flows.default_router.data import load_all
from flows.default_router.sweep import STRONG_PRICE, WEAK_PRICE, evaluate_pair

TARGETS = {"mt_bench": 0.62, "mmlu": 0.60, "gsm8k": 0.62}
PAIR = [
    Candidate("openai", "gpt-4-1106-preview", *STRONG_PRICE, context_length=128000),
    Candidate("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1", *WEAK_PRICE, context_length=32768),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "routellm")
    parser.add_argument("--alpaca", type=Path, default=REPO.parent / "shared" / "data" / "alpaca_eval")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    router = load_default_router()
    benchmarks = load_all(args.data)
    results = {}
    print(f"{'benchmark':<9} {'items':>5} {'router':<24} {'APGR':>6} {'CPT50':>7} {'CPT80':>7}  target")
    for name in ("mt_bench", "mmlu", "gsm8k"):
        items = benchmarks[name].subset(benchmarks[name].heldout)
        started = time.perf_counter()
        quality = np.stack([router.predict_quality(router.featurizer.featurize(p), PAIR) for p in items.prompts])
        elapsed = time.perf_counter() - started
        res = evaluate_pair(name, quality, items.strong, items.weak, router.schedule)
        results[name] = res.as_dict() | {"score_seconds": round(elapsed, 3)}
        rows = [
            ("default router (t=0..10)", res.router),
            ("  same scores, 10 quantiles", res.router_quantile),
            ("random", res.random),
            ("oracle", res.oracle),
        ]
        for label, m in rows:
            target = f">= {TARGETS[name]:.2f} {'ok' if m.apgr >= TARGETS[name] else 'MISSED'}" if label.startswith(
                "default"
            ) else ""
            print(f"{name:<9} {res.items:>5} {label:<24} {m.apgr:>6.3f} {m.cpt50 * 100:>6.1f}% {m.cpt80 * 100:>6.1f}%  {target}")
        print(f"{'':<9} strong-call share by cost_quality_tradeoff 0..10: {[round(s, 2) for s in res.shares]}")
    alpaca = alpaca_eval_pair(args.alpaca, router)
    if alpaca is not None:
        results["alpaca_eval"] = alpaca.as_dict()
        print(f"{'alpaca':<9} {alpaca.items:>5} {'default router (t=0..10)':<24} {alpaca.router.apgr:>6.3f} "
              f"{alpaca.router.cpt50 * 100:>6.1f}% {alpaca.router.cpt80 * 100:>6.1f}%  measure only (CC BY-NC data)")
        print(f"{'':<9} oracle {alpaca.oracle.apgr:.3f}; strong-call share by trade-off: "
              f"{[round(x, 2) for x in alpaca.shares]}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def alpaca_eval_pair(folder: Path, router):
    """Extra, measure-only check on open-ended chat: AlpacaEval 2.0's 805 instructions, GPT-4-1106 vs Mixtral-8x7B
    (its '_concise' prompt variant, the only Mixtral run there). Score = the judge's probability that the routed
    answer beats GPT-4-1106's (so always-strong scores 0.5). CC BY-NC data: used to measure, never to train."""
    import csv

    import numpy as np

    prefs = folder / "weighted_gpt4turbo_preferences_long.csv"
    if not prefs.exists():
        return None
    with (folder / "instructions.csv").open(newline="", encoding="utf-8") as f:
        instructions = {r["instruction_id"]: r["instruction"] for r in csv.DictReader(f)}
    wins: dict[str, dict[str, float]] = {"gpt4_1106_preview": {}, "Mixtral-8x7B-Instruct-v0.1_concise": {}}
    with prefs.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["model"] in wins and r["preference"]:
                wins[r["model"]][r["instruction_id"]] = float(r["preference"]) - 1.0
    ids = sorted(set(wins["gpt4_1106_preview"]) & set(wins["Mixtral-8x7B-Instruct-v0.1_concise"]), key=int)
    strong = np.array([wins["gpt4_1106_preview"][i] for i in ids])
    weak = np.array([wins["Mixtral-8x7B-Instruct-v0.1_concise"][i] for i in ids])
    quality = np.stack([router.predict_quality(router.featurizer.featurize(instructions[i]), PAIR) for i in ids])
    return evaluate_pair("alpaca_eval", quality, strong, weak, router.schedule)


if __name__ == "__main__":
    raise SystemExit(main())
