"""A custom router over 11 models with real price differences, trained and routed through the HTTP API.

    .venv/bin/python -m benchmarks.custom_router_many_models

Data: AlpacaEval 2.0 per-instruction judge preferences (tatsu-lab/alpaca_eval, CC BY-NC 4.0, see
../shared/data/alpaca_eval/README.md): for each of 805 instructions, the GPT-4-Turbo judge's probability that a
model's answer beats gpt4_1106_preview's. That probability is the score (0..1). Measured only: nothing trained
on it is shipped. No scores are invented; each model keeps its own judged outputs.

Prices: AlpacaEval has none. Each model is uploaded as a custom model priced like its catalogue entry (the
LiteLLM price map bundled in api/catalogue), the same model where the catalogue has it, else its base model's
hosted price (fine-tunes) or the same-size successor (Qwen-14B-Chat -> Qwen2.5-14B); see PRICED_AS. A request's
cost = instruction tokens (chars / 4) x input price + that model's own answer tokens (words x 4/3) x output price.

Split: held out = sha256(instruction) mod 5 == 0 (flows.default_router.data.fold_of, the routers' split; about 160
instructions); the rest (about 645) are uploaded. Every held-out instruction is routed at cost_quality_tradeoff
0..10 among all 11 models. With `--folds 5` each fifth is held out in turn (five uploads, five routers) and the
figures pool all the instructions, each routed by a router that never saw it: 160 instructions alone move the
cost figures by several points. Targets (issue 4): at t = 0 beat the best single model's quality; at some t
match it within 1 point at well under half its cost.
"""

from __future__ import annotations

import argparse
import csv
import time

import httpx
import numpy as np

from benchmarks.custom_router_common import SHARED, csv_of, route, serve, training_metrics, upload, wait_ready
from flows.default_router.data import fold_of

# AlpacaEval model -> catalogue entry whose price it gets (input, output USD per million tokens).
PRICED_AS = {
    "gpt4_1106_preview": ("openai", "gpt-4-1106-preview"),
    "gpt-3.5-turbo-1106": ("openai", "gpt-3.5-turbo-1106"),
    "gpt-3.5-turbo-0301": ("openai", "gpt-3.5-turbo"),
    "Mixtral-8x7B-Instruct-v0.1_concise": ("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
    "FuseChat-Gemma-2-9B-Instruct": ("google", "gemini-gemma-2-9b-it"),
    "FuseChat-Llama-3.1-8B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo"),
    "FuseChat-Qwen-2.5-7B-Instruct": ("togetherai", "Qwen/Qwen2.5-7B-Instruct-Turbo"),
    "FuseChat-Llama-3.2-3B-Instruct": ("togetherai", "meta-llama/Llama-3.2-3B-Instruct"),
    "FuseChat-Llama-3.2-1B-Instruct": ("togetherai", "meta-llama/Llama-3.2-1B-Instruct"),
    "humpback-llama2-70b": ("perplexity", "llama-2-70b-chat"),
    "Qwen-14B-Chat": ("togetherai", "Qwen/Qwen2.5-14B-Instruct"),
}


def load() -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(instructions, models, score (n, M), output tokens (n, M))."""
    with (SHARED / "alpaca_eval" / "instructions.csv").open(newline="", encoding="utf-8") as f:
        instructions = {int(r["instruction_id"]): r["instruction"] for r in csv.DictReader(f)}
    ids = sorted(instructions)
    models = list(PRICED_AS)
    score = np.full((len(ids), len(models)), np.nan)
    tokens = np.full((len(ids), len(models)), np.nan)
    col = {m: j for j, m in enumerate(models)}
    with (SHARED / "alpaca_eval" / "weighted_gpt4turbo_preferences_long.csv").open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["model"] in col:
                i = int(r["instruction_id"])
                score[i, col[r["model"]]] = float(r["preference"]) - 1.0
                tokens[i, col[r["model"]]] = float(r["output_words"]) * 4 / 3
    keep = ~np.isnan(score).any(axis=1)
    return [instructions[i] for i in np.flatnonzero(keep)], models, score[keep], tokens[keep]


def providers(models: list[str]) -> list[dict]:
    from api.catalogue import load_catalogue

    catalogue = load_catalogue()
    out = []
    for m in models:
        entry = catalogue.get(*PRICED_AS[m])
        assert entry is not None, PRICED_AS[m]
        out.append({"provider": "alpacaeval", "model": m, "is_custom": True, "input_price": entry.input_price,
                    "output_price": entry.output_price, "context_length": 8192, "latency": 1.0})
    return out


def route_fold(client: httpx.Client, svc, prompts: list[str], keys: list[str], score: np.ndarray,
               provs: list[dict], fold: np.ndarray, k: int) -> tuple[np.ndarray, float, dict]:
    """Upload every instruction outside fold k, then route fold k's at t = 0..10: (picks (11, n_k), seconds from
    upload to a live router, the flow's out-of-fold summary)."""
    train, test = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
    data = csv_of([prompts[i] for i in train], keys, score[train].tolist())
    started = time.perf_counter()
    pid, _ = upload(svc, data, provs)
    wait_ready(client, svc, pid, provs)
    trained_s = time.perf_counter() - started
    picks = np.zeros((11, len(test)), dtype=int)
    for j, i in enumerate(test):
        for t in range(11):
            picks[t, j] = keys.index(route(client, svc, pid, prompts[i], provs, t))
    return picks, trained_s, training_metrics(svc, pid).get("summary", {})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, choices=(1, 5), default=1,
                        help="1: hold out fold 0 only (fast); 5: hold out each fifth in turn, training a router "
                             "without it each time, and pool the five (every instruction routed once, unseen)")
    args = parser.parse_args()
    prompts, models, score, out_tokens = load()
    provs = providers(models)
    price_in = np.array([p["input_price"] for p in provs])
    price_out = np.array([p["output_price"] for p in provs])
    cost = (np.array([len(p) / 4 for p in prompts])[:, None] * price_in + out_tokens * price_out) / 1e6
    fold = np.array([fold_of(p) for p in prompts])
    keys = [f"alpacaeval/{m}" for m in models]
    test = np.concatenate([np.flatnonzero(fold == k) for k in range(args.folds)])
    picks, trained = [], []
    svc = serve()
    try:
        with httpx.Client(timeout=60) as client:
            for k in range(args.folds):
                p, s, cv = route_fold(client, svc, prompts, keys, score, provs, fold, k)
                picks.append(p)
                trained.append(s)
    finally:
        svc.stop()
    picks = np.concatenate(picks, axis=1)

    rows = np.arange(len(test))
    q, c = score[test], cost[test]
    singles = [(models[m], q[:, m].mean(), c[:, m].mean()) for m in range(len(models))]
    best = max(singles, key=lambda s: s[1])
    sizes = ", ".join(str(int((fold != k).sum())) for k in range(args.folds))
    print(f"AlpacaEval 2.0, {len(models)} models, {args.folds} held-out fold(s): trained on {sizes} instructions "
          f"through the HTTP endpoint (upload -> live router: {', '.join(f'{s:.1f} s' for s in trained)}); "
          f"{len(test)} held-out instructions x 11 settings through modelSelect")
    print(f"\n{'':36} {'win rate':>9} {'USD/1k req':>11}")
    for name, qq, cc in sorted(singles, key=lambda s: -s[2]):
        print(f"{name:36} {qq:9.4f} {cc * 1000:11.4f}")
    oracle = q.max(axis=1).mean()
    print(f"{'oracle (best model per instruction)':36} {oracle:9.4f}")
    print()
    found = None
    for t in range(11):
        qt, ct = q[rows, picks[t]].mean(), c[rows, picks[t]].mean()
        used = np.bincount(picks[t], minlength=len(models))
        top = ", ".join(f"{models[m]} {used[m] / len(test):.0%}" for m in np.argsort(-used)[:3] if used[m])
        print(f"router t={t:<2} {'':25} {qt:9.4f} {ct * 1000:11.4f} ({ct / best[2]:4.0%})   {top}")
        if qt >= best[1] - 0.01 and ct < best[2] and (found is None or ct < found[2]):
            found = (t, qt, ct)  # the cheapest setting within one point of the best single model
    q0 = q[rows, picks[0]].mean()
    print(f"\nbest single model: {best[0]} ({best[1]:.4f}, ${best[2] * 1000:.4f} per 1k requests)")
    print(f"t=0 beats it: {'YES' if q0 > best[1] else 'NO'} ({q0:.4f} vs {best[1]:.4f})")
    if found:
        t, qt, ct = found
        print(f"cheapest setting within 1 point of it: t={t}, {qt:.4f} at {ct / best[2]:.0%} of its cost "
              f"({'under half: YES' if ct < best[2] / 2 else 'under half: NO'})")
    else:
        print("no setting matches the best single model within 1 point at a lower cost")
    if args.folds == 1:
        print(f"(training-time out-of-fold evaluation: {cv})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
