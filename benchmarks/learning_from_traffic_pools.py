"""The lexical learner of issue 33 beyond GSM8K and MMLU: other pairs of models on other kinds of prompt, none of
them in the default router's training data or used to choose anything in the learner or its gate. The flow's own
code in process, as benchmarks/learning_from_traffic_lexical.py runs it (same split, deterministic traffic at
cost_quality_tradeoff 5 with no exploration, bandit labels, the fair-coin control, one learn()).

    .venv/bin/python -m benchmarks.learning_from_traffic_pools [--only math_l5,crux,mmlu_pro] [--seeds 2] \
        [--first-seed 2] [--router-cache DIR]

Pools (per-prompt 0/1 outcomes in ../shared/data; the two models are custom candidates at the prices below, so the
router predicts them from its figures by name, as a caller's custom models):
- math_l5: ZeroEval's MATH level 5 (598 problems), GPT-4o (2024-08-06) vs Llama-3.1-70B-Instruct;
- crux: ZeroEval's CRUXEval output prediction (800), GPT-4o (2024-08-06) vs Llama-3.1-70B-Instruct;
- mmlu_pro: MMLU-Pro's non-MMLU questions (5,138; a fixed sample of 5,000), Llama-3.1-70B-Instruct vs
  Mixtral-8x7B-Instruct.
The router is the default router trained without GSM8K (`--router-cache` as in the other learning benchmarks):
these kinds are unseen to it either way. Printed per pool, labels and seed: the labels the learner read, its APGR gain
on the judged prompts as fitted and as served (the learner if the gate promoted it, else the router), the gate's
decision and its two tests, and the gain the same learner makes on the other pools (kinds without feedback).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

import numpy as np

from benchmarks.learning_from_traffic import left_out_routers
from benchmarks.learning_from_traffic_lexical import one, scored

POOLS = {
    "math_l5": ("zeroeval/math_l5.csv", ("openai", "gpt-4o-2024-08-06", 2.5, 10.0),
                ("meta-llama", "Meta-Llama-3.1-70B-Instruct", 0.9, 0.9)),
    "crux": ("zeroeval/crux.csv", ("openai", "gpt-4o-2024-08-06", 2.5, 10.0),
             ("meta-llama", "Meta-Llama-3.1-70B-Instruct", 0.9, 0.9)),
    "mmlu_pro": ("mmlu_pro/mmlu_pro_nonmmlu.csv", ("meta-llama", "Meta-Llama-3_1-70B-Instruct", 0.9, 0.9),
                 ("mistralai", "Mixtral-8x7B-Instruct-v0.1", 0.6, 0.6)),
}


def load_pool(shared: Path, name: str) -> tuple[list[str], np.ndarray, np.ndarray, list]:
    """(prompts, strong outcomes, weak outcomes, the two custom candidates) of the rows both models were scored on."""
    from api.routing.router import Candidate  # lazy: after the data dir is set

    path, strong, weak = POOLS[name]
    with open(shared / path, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r.get(strong[1], "") != "" and r.get(weak[1], "") != ""]
    candidates = [Candidate(provider=p, model=m, input_price=i, output_price=o) for p, m, i, o in (strong, weak)]
    return ([r["prompt"] for r in rows], np.array([float(r[strong[1]]) for r in rows]),
            np.array([float(r[weak[1]]) for r in rows]), candidates)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(POOLS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=2)
    parser.add_argument("--router-cache", help="keep the left-out routers in this folder and reuse them")
    args = parser.parse_args()

    from api.routing.default_router import load_default_router
    from benchmarks.default_router_unseen import SHARED

    names = [n for n in args.only.split(",") if n]
    print(f"load average {os.getloadavg()[0]:.1f}; no exploration (propensity 1.0); cost_quality_tradeoff 5",
          flush=True)
    for _, _, folder in left_out_routers(["gsm8k"], args.router_cache):
        router = load_default_router(folder, folder / "model_benchmarks.csv")
        data = {}
        for name in names:
            prompts, strong, weak, candidates = load_pool(SHARED, name)
            data[name] = scored(router, prompts, strong, weak, candidates)
        for name in names:
            d = data[name]
            others = {o: data[o] for o in names if o != name and data[o]["keys"] == d["keys"]}
            judged_n = min(1_500, int(0.3 * len(d["texts"])))
            print(f"\n{name}: {' vs '.join(d['keys'])}; strong {d['strong'].mean():.3f}, weak {d['weak'].mean():.3f}; "
                  f"{judged_n} judged; kinds without feedback (same pair): {', '.join(others) or '-'}", flush=True)
            print(f"  {'labels':<7} {'seed':>4} {'labels':>6}  {'fitted':>7}  {'served':>7}  {'unseen kinds':<18} "
                  f"{'decision':<9} {'replay':>8}  {'DM [low]':>18}  {'s':>4}", flush=True)
            for noise in (False, True):
                for seed in range(args.first_seed, args.first_seed + args.seeds):
                    r = one(d, others, seed, judged_n, noise, router.featurizer.version)
                    unseen = " ".join(f"{g:+.3f}" for g in r[3]) or "-"
                    print(f"  {'random' if noise else 'real':<7} {seed:>4} {r[0]:>6}  {r[1]:+7.3f}  {r[2]:+7.3f}  "
                          f"{unseen:<18} {('promoted' if r[4] else 'kept'):<9} {r[6]:+8.4f}  "
                          f"{r[7]:+8.4f} [{r[8]:+.4f}]  {r[9]:4.0f}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
