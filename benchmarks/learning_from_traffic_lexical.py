"""The lexical learner of issue 33 in process: does bandit feedback with no exploration make a preference route
held-out prompts of the same kind better, does it leave a kind it never had feedback on alone, and do random labels
stay out? The flow's own code (flows/learning/learn.py: fit, gate, the parameters it would serve) without Prefect.

    .venv/bin/python -m benchmarks.learning_from_traffic_lexical [--only gsm8k,mmlu] [--seeds 2] [--first-seed 2]

For each left-out benchmark (GPT-4-1106 vs Mixtral-8x7B, RouteLLM's real per-prompt 0/1 outcomes), with the default
router trained without it (benchmarks/learning_from_traffic.py left_out_routers) and per seed:
1. its prompts (at most 5,000, a fixed sample) are shuffled; the last `--judged` (default 30 %, at most 1,500) are
   judged, the first 2,000 of the others (all of them when fewer) are the traffic;
2. the traffic is routed deterministically at cost_quality_tradeoff 5 (lambda = the median predicted gap: half to
   each model, as the dial would calibrate it; propensity 1.0 on every decision) and the chosen model's outcome is
   its label; the noise control labels every decision with a fair coin instead;
3. learn() fits and judges the lexical learner on all the labels; printed: the gate's decision, its two tests, and
   APGR on the judged prompts with the learner as fitted (whether or not promoted) and as served (the learner if
   promoted, else the router), each as a gain over the router alone;
4. the same learner routes kinds it never had feedback on: the *other* benchmark (all of GSM8K's 1,307 prompts, or
   MMLU's fixed sample of 5,000; on 1,000 a single prompt moved APGR by 0.002-0.005; the pair on whose seeds 0-1 the
   familiarity ramp was chosen) and MT-Bench's 80 first turns (judged 1-10, APGR on
   the mean judge score; never used to choose anything): its APGR gain there, as fitted.
After the first real-label run of each benchmark, the serving cost: Correction.apply (what the decision path adds
for a promoted learner: hashing the prompt, a sparse dot product per known candidate) on the judged prompts, p50 and
p99 per decision.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from benchmarks.learning_from_traffic import apgr_of, left_out_routers, pair_candidates

MAX_PROMPTS, TRAFFIC = 5_000, 2_000


def scored(router, prompts: list[str], strong: np.ndarray, weak: np.ndarray, candidates: list | None = None) -> dict:
    """The router's embedding and predicted quality of (a fixed sample of at most MAX_PROMPTS of) the prompts, for
    the pair (`candidates`, strong first; default GPT-4-1106 and Mixtral-8x7B)."""
    candidates = candidates or pair_candidates()
    idx = np.arange(len(prompts))
    if len(idx) > MAX_PROMPTS:
        idx = np.sort(np.random.default_rng(7).permutation(len(idx))[:MAX_PROMPTS])
    feats = [router.featurizer.featurize(prompts[i]) for i in idx]
    dim = router.featurizer.embedding.dim
    return {"texts": [prompts[i] for i in idx], "strong": strong[idx], "weak": weak[idx],
            "keys": [f"{c.provider}/{c.model}" for c in candidates],
            "embedding": np.stack([f.vector[:dim] for f in feats]).astype(np.float64),
            "quality": np.stack([router.predict_quality(f, candidates) for f in feats]).astype(np.float64)}


def evidence(d: dict, idx: np.ndarray, chosen: np.ndarray, label: np.ndarray, lam: float):
    from flows.learning.table import Evidence

    n = len(idx)
    return Evidence([str(i) for i in idx], list(d["keys"]), np.tile([0, 1], (n, 1)), np.ones((n, 2), bool),
                    d["quality"][idx], np.tile([1.0, 0.0], (n, 1)), np.full(n, lam), chosen, np.ones(n), label,
                    d["embedding"][idx], None, [d["texts"][i] for i in idx])


def gain(d: dict, idx: np.ndarray, params) -> float:
    """APGR gain on the prompts `idx` of the quality served with `params` (None: the router) over the router."""
    from api.selection.learned import Correction
    from flows.learning.off_policy import corrected_quality

    q = d["quality"][idx]
    s, w = d["strong"][idx], d["weak"][idx]
    base = apgr_of(q[:, 0] - q[:, 1], s, w)
    if params is None:
        return 0.0
    ev = evidence(d, idx, np.zeros(len(idx), int), np.zeros(len(idx)), 0.0)
    served = corrected_quality(ev, Correction.of("served", params))
    return apgr_of(served[:, 0] - served[:, 1], s, w) - base


def serving_cost(d: dict, idx: np.ndarray, params) -> tuple[float, float]:
    """(p50, p99) milliseconds of Correction.apply per decision on the prompts `idx`."""
    from api.selection.learned import Correction

    correction = Correction.of("served", params)
    dim = d["embedding"].shape[1]
    keys = list(d["keys"])
    times = []
    for i in idx:
        started = time.perf_counter_ns()
        correction.apply(d["embedding"][i], keys, d["quality"][i], d["texts"][i], dim)
        times.append(time.perf_counter_ns() - started)
    return float(np.percentile(times, 50)) / 1e6, float(np.percentile(times, 99)) / 1e6


def one(d: dict, others: dict[str, dict], seed: int, judged_n: int, noise: bool, version: str) -> list:
    from flows.learning.learn import learn, lexical_challenger

    order = np.random.default_rng(seed).permutation(len(d["texts"]))
    judged, traffic = order[-judged_n:], order[:-judged_n][:TRAFFIC]
    q = d["quality"][traffic]
    lam = float(np.median(q[:, 0] - q[:, 1]))
    chosen = np.where(q[:, 0] - lam > q[:, 1], 0, 1)
    label = np.where(chosen == 0, d["strong"][traffic], d["weak"][traffic]).astype(np.float64)
    if noise:
        label = np.random.default_rng(seed + 1000).integers(0, 2, len(label)).astype(np.float64)
    ev = evidence(d, traffic, chosen, label, lam)
    started = time.perf_counter()
    outcome = learn(ev, None, version, curve=False)
    seconds = time.perf_counter() - started
    lex = outcome.evaluation["lexical"]
    fitted = outcome.parameters if outcome.parameters.lexical is not None else lexical_challenger(ev, None, version)[0]
    served = outcome.parameters if outcome.promote else None
    cost = serving_cost(d, judged[:300], fitted)
    return [len(traffic), gain(d, judged, fitted), gain(d, judged, served),
            [gain(o, np.arange(len(o["texts"])), fitted) for o in others.values()], outcome.promote,
            outcome.evaluation["kind"] if outcome.promote else "-", lex["replay_error_gain"]["value"],
            lex["dm_difference"]["value"], lex["dm_difference"]["low"], seconds, cost]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="gsm8k,mmlu")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=2, help="seeds 0 and 1 chose the gate's rule")
    parser.add_argument("--router-cache", help="keep the left-out routers in this folder and reuse them")
    args = parser.parse_args()

    from api.routing.default_router import load_default_router
    from benchmarks.default_router_unseen import SHARED
    from flows.default_router.data import load_all

    pairs = load_all(SHARED / "routellm")
    names = [b for b in args.only.split(",") if b]
    print(f"load average {os.getloadavg()[0]:.1f}; no exploration (propensity 1.0); cost_quality_tradeoff 5",
          flush=True)
    for benchmark, items, folder in left_out_routers(names, args.router_cache):
        router = load_default_router(folder, folder / "model_benchmarks.csv")
        other_name = "gsm8k" if benchmark != "gsm8k" else "mmlu"
        d = scored(router, items.prompts, items.strong, items.weak)
        others = {name: scored(router, pairs[name].prompts, pairs[name].strong, pairs[name].weak)
                  for name in (other_name, "mt_bench")}
        judged_n = min(1_500, int(0.3 * len(d["texts"])))
        print(f"\n{benchmark} left out of the router: {min(TRAFFIC, len(d['texts']) - judged_n)} feedbacks, "
              f"{judged_n} judged; kinds without feedback: {', '.join(others)}", flush=True)
        print(f"  {'labels':<7} {'seed':>4} {'labels':>6}  {'fitted':>7}  {'served':>7}  "
              f"{other_name + ' (unseen)':>16}  {'mt_bench (unseen)':>17}  {'decision':<16} {'replay':>8}  "
              f"{'DM [low]':>18}  {'s':>5}", flush=True)
        for noise in (False, True):
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                r = one(d, others, seed, judged_n, noise, router.featurizer.version)
                print(f"  {'random' if noise else 'real':<7} {seed:>4} {r[0]:>6}  {r[1]:+7.3f}  {r[2]:+7.3f}  "
                      f"{r[3][0]:+16.3f}  {r[3][1]:+17.3f}  {('promoted' if r[4] else 'kept'):<16} {r[6]:+8.4f}  "
                      f"{r[7]:+8.4f} [{r[8]:+.4f}]  {r[9]:5.0f}", flush=True)
                if not noise and seed == args.first_seed:
                    print(f"  serving cost of the fitted learner: p50 {r[10][0]:.3f} ms, p99 {r[10][1]:.3f} ms per "
                          f"decision (load average {os.getloadavg()[0]:.1f})", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
