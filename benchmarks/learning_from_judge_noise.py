"""Learning from a judge's verdicts (issue 23, judge sampling): labels that are the real outcome flipped at a judge's
error rate. Does the learn-from-traffic gate keep them out when they do not help, and what do they teach when they
do? The setting is benchmarks/learning_from_traffic.py's (its functions, in process): the default router trained
without the benchmark, GSM8K traffic routed at cost_quality_tradeoff 5 with exploration_rate 0.1, the chosen
model's label after 0-2,000 decisions, APGR on later judged prompts of the same benchmark.

    .venv/bin/python -m benchmarks.learning_from_judge_noise [--only gsm8k] [--seeds 3] [--judged 300]
        [--errors 0,0.1,0.2,0.3] [--router-cache DIR]

An error rate of 0 is the caller's exact feedback (that benchmark's "real outcomes" row); 0.5 would be random
labels. A judge's verdict is flipped independently of the prompt here; a real judge's errors are not (it misses the
hard prompts more), so this is the kinder case.
"""

from __future__ import annotations

import argparse
import os
import random
import sys

import numpy as np

from benchmarks.learning_from_traffic import (N_FEEDBACK, apgr_of, evidence_of, left_out_routers, pair_candidates,
                                             simulate)


def curve(name: str, items, router, seeds: int, judged_n: int, errors: list[float]) -> None:
    from api.selection.learned import Correction  # lazy: after the data dir is set
    from flows.learning.learn import learn
    from flows.learning.off_policy import corrected_quality

    candidates = pair_candidates()
    feats = [router.featurizer.featurize(p) for p in items.prompts]
    dim = router.featurizer.embedding.dim
    features = np.stack([f.vector[:dim] for f in feats])
    quality = np.stack([router.predict_quality(f, candidates) for f in feats])
    version = router.featurizer.version
    strong, weak = items.strong, items.weak
    print(f"\n{name} left out: {len(items.prompts)} prompts, {judged_n} judged per seed", flush=True)
    print(f"  {'judge error':>11}  {'labels':>6}  {'fresh':>6}  {'challenger':>17}  {'served (gated)':>17}  promoted")
    for error in errors:
        table: dict[int, list[list[float]]] = {n: [] for n in N_FEEDBACK if n}
        for seed in range(seeds):
            order = np.random.default_rng(seed).permutation(len(items.prompts))
            judged, traffic = order[-judged_n:], order[:-judged_n]
            log = simulate(quality, features, strong, weak, traffic, random.Random(seed), noise=False)
            flips = np.random.default_rng(1000 + seed).random(len(log["label"])) < error  # the judge's mistakes
            log["label"] = np.where(flips, 1.0 - log["label"], log["label"])
            s_j, w_j = strong[judged], weak[judged]
            fresh = apgr_of(quality[judged, 0] - quality[judged, 1], s_j, w_j)
            blank = {**log, "chosen": np.zeros(len(judged), int), "propensity": np.ones(len(judged)),
                     "label": np.zeros(len(judged))}
            judged_ev = evidence_of(quality, features, judged, blank, len(judged))
            for n in table:
                if n > len(traffic):
                    continue
                outcome = learn(evidence_of(quality, features, traffic, log, n), None, version, curve=False)
                q = corrected_quality(judged_ev, Correction.of("c", outcome.parameters))
                chal = apgr_of(q[:, 0] - q[:, 1], s_j, w_j)
                table[n].append([fresh, chal, chal if outcome.promote else fresh, float(outcome.promote)])
        for n, rows in table.items():
            if rows:
                m = np.mean(rows, axis=0)
                print(f"  {error:>11.2f}  {n:>6}  {m[0]:6.3f}  {m[1]:6.3f} ({m[1] - m[0]:+.3f})  "
                      f"{m[2]:6.3f} ({m[2] - m[0]:+.3f})  {int(round(m[3] * len(rows)))}/{len(rows)}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="gsm8k", help="benchmarks to leave out, comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--judged", type=int, default=300, help="judged prompts per seed, at most a quarter")
    parser.add_argument("--errors", default="0,0.1,0.2,0.3", help="the judge's error rates, comma-separated")
    parser.add_argument("--router-cache", help="keep the left-out routers in this folder and reuse them")
    args = parser.parse_args()

    from api.routing.default_router import load_default_router

    errors = [float(e) for e in args.errors.split(",") if e]
    print(f"load average {os.getloadavg()[0]:.1f}; exploration_rate 0.1; cost_quality_tradeoff 5; "
          f"{args.seeds} seeds", flush=True)
    for benchmark, items, folder in left_out_routers([b for b in args.only.split(",") if b], args.router_cache):
        router = load_default_router(folder, folder / "model_benchmarks.csv")
        curve(benchmark, items, router, args.seeds, min(args.judged, len(items.prompts) // 4), errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
