"""Learning from traffic (issue 23): does a preference's feedback make the router better on a kind of prompt it never
trained on? Leave one benchmark out, simulate a caller with bandit feedback, print the learning curve.

    .venv/bin/python -m benchmarks.learning_from_traffic [--only mmlu,gsm8k] [--seeds 3] [--speed-rows 100000]
    .venv/bin/python -m benchmarks.learning_from_traffic --through-api [--only gsm8k] [--judged 300] [--seeds 1]
        [--exploration-rate 0] [--checkpoints 0,2000]

The second form runs the same learning curve through the real service instead (HTTP, Prefect):
benchmarks/learning_from_traffic_api.py says how. The first, described below, calls the flow's code in process.

For each left-out benchmark (GPT-4-1106 vs Mixtral-8x7B, RouteLLM's per-prompt 0/1 outcomes in ../shared/data):
1. the default router is trained without it (benchmarks/default_router_unseen.py: every copy of the benchmark and
   the figures measured on its RouterDC file left out);
2. its prompts are shuffled (per seed) and split: the last `--judged` are judged, the others are the traffic;
3. a simulated caller routes the traffic at cost_quality_tradeoff 5 (lambda = the median predicted gap: half to each
   model, as the dial would calibrate it) with exploration_rate 0.1 (api/selection/exploration.py), and reports
   the chosen model's real 0/1 outcome as feedback (bandit: never the other model's);
4. after 0, 250, 500, 1000, 2000 feedbacks the learn-from-traffic code (flows/learning/learn.py: the flow's own
   fit, off-policy evaluation and promotion rule, called in process, not through Prefect) fits a challenger, and
   the judged prompts are routed by (a) the router alone (a fresh preference), (b) the router plus the challenger as
   fitted (the cluster correction), (c) what the flow serves (the challenger it promoted, if any: the cluster
   correction or the nearest-neighbour residual), (d) the nearest-neighbour residual
   (api/selection/personalization.py) fed the same feedback, ungated;
   APGR (RouteLLM's, over the strong-call share 0..1, as the dial sweeps it) of each on the judged prompts;
5. the same with random labels (a fair coin per feedback): the noise control;
6. the ceiling: the same correction fitted on both models' outcomes for every traffic prompt.
Then the flow's work on `--speed-rows` logged decisions (written as Parquet event logs to a temp data dir) is timed:
build the training table from the analysts' views, fit, evaluate, record the version.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_FEEDBACK = (0, 250, 500, 1000, 2000)
STRONG = ("openai", "gpt-4-1106-preview")
WEAK = ("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1")
RATE = 0.1


def apgr_of(gap: np.ndarray, strong: np.ndarray, weak: np.ndarray) -> float:
    from flows.evaluation import summarize, threshold_curve  # lazy: after the data dir is set

    return summarize(threshold_curve(gap, strong, weak), float(weak.mean()), float(strong.mean())).apgr



def pair_candidates() -> list:
    """The pair as modelSelect's custom candidates, at their list prices per million tokens."""
    from api.routing.router import Candidate  # lazy: after the data dir is set

    return [Candidate(provider=STRONG[0], model=STRONG[1], input_price=10.0, output_price=30.0),
            Candidate(provider=WEAK[0], model=WEAK[1], input_price=0.6, output_price=0.6)]

def simulate(quality: np.ndarray, features: np.ndarray, strong: np.ndarray, weak: np.ndarray, traffic: np.ndarray,
             rng: random.Random, noise: bool) -> dict:
    """Route the traffic (router alone, exploring), with bandit labels; returns the logged evidence as arrays."""
    from api.selection.exploration import explore

    q = quality[traffic]
    lam = float(np.median(q[:, 0] - q[:, 1]))  # position 1 for the dearer strong model, 0 for the weak one
    chosen, propensity, labels = [], [], []
    for row, i in enumerate(traffic):
        utility = np.array([q[row, 0] - lam, q[row, 1]])
        ranking = np.argsort(-utility, kind="stable")
        position, p = explore(utility[ranking].tolist(), RATE, rng)
        action = int(ranking[position])
        chosen.append(action)
        propensity.append(p)
        outcome = (strong if action == 0 else weak)[i]
        labels.append(float(rng.random() < 0.5) if noise else float(outcome))
    return {"chosen": np.array(chosen), "propensity": np.array(propensity), "label": np.array(labels), "lam": lam}


def evidence_of(quality, features, traffic, log, n):
    from flows.learning.table import Evidence

    idx = traffic[:n]
    return Evidence(session_ids=[str(i) for i in idx], models=["/".join(STRONG), "/".join(WEAK)],
                    model=np.tile([0, 1], (n, 1)), valid=np.ones((n, 2), dtype=bool),
                    router_quality=quality[idx].astype(np.float64), position=np.tile([1.0, 0.0], (n, 1)),
                    lam=np.full(n, log["lam"]), chosen=log["chosen"][:n], propensity=log["propensity"][:n],
                    label=log["label"][:n], features=features[idx].astype(np.float64))


def nn_gap(quality, features, judged, traffic, log, n, dim) -> np.ndarray:
    from api.selection.personalization import FeedbackMemory

    memory = FeedbackMemory()
    keys = ["/".join(STRONG), "/".join(WEAK)]
    for k in range(n):
        i, a = traffic[k], int(log["chosen"][k])
        memory.add("p", str(k), keys[a], features[i, :dim], int(log["label"][k]), float(quality[i, a]))
    adjusted = np.array([memory.adjust("p", features[j, :dim], keys, quality[j]) for j in judged]) if n else \
        quality[judged]
    return adjusted[:, 0] - adjusted[:, 1]


def full_label_ceiling(quality, features, strong, weak, seed, judged_n, version) -> tuple[float, float]:
    """(fresh, corrected) APGR when every traffic prompt had both models' outcomes: what the correction's form can
    reach on this benchmark with far more than bandit feedback."""
    from api.selection.learned import Correction
    from flows.learning.learn import fit
    from flows.learning.off_policy import corrected_quality

    order = np.random.default_rng(seed).permutation(len(strong))
    judged, traffic = order[-judged_n:], order[:-judged_n]
    both = np.concatenate([traffic, traffic])
    n = len(both)
    log = {"lam": 0.0, "chosen": np.r_[np.zeros(len(traffic), int), np.ones(len(traffic), int)],
           "propensity": np.ones(n), "label": np.r_[strong[traffic], weak[traffic]]}
    params, _ = fit(evidence_of(quality, features, both, log, n), version)
    blank = {"lam": 0.0, "chosen": np.zeros(judged_n, int), "propensity": np.ones(judged_n),
             "label": np.zeros(judged_n)}
    q = corrected_quality(evidence_of(quality, features, judged, blank, judged_n), Correction.of("c", params))
    s_j, w_j = strong[judged], weak[judged]
    return apgr_of(quality[judged, 0] - quality[judged, 1], s_j, w_j), apgr_of(q[:, 0] - q[:, 1], s_j, w_j)


def curve(name, items, router, seeds: int, judged_n: int) -> None:
    from api.selection.learned import Correction
    from flows.learning.learn import learn
    from flows.learning.off_policy import corrected_quality

    candidates = pair_candidates()
    feats = [router.featurizer.featurize(p) for p in items.prompts]
    dim = router.featurizer.embedding.dim
    features = np.stack([f.vector[:dim] for f in feats])  # the embedding: what feedback rows record
    quality = np.stack([router.predict_quality(f, candidates) for f in feats])
    version = router.featurizer.version
    strong, weak = items.strong, items.weak
    print(f"\n{name} left out: {len(items.prompts)} prompts, {judged_n} judged per seed; strong {strong.mean():.3f}, "
          f"weak {weak.mean():.3f}", flush=True)
    for noise in (False, True):
        table: dict[int, list[list[float]]] = {n: [] for n in N_FEEDBACK}
        for seed in range(seeds):
            order = np.random.default_rng(seed).permutation(len(items.prompts))
            judged, traffic = order[-judged_n:], order[:-judged_n]
            log = simulate(quality, features, strong, weak, traffic, random.Random(seed), noise)
            s_j, w_j = strong[judged], weak[judged]
            fresh = apgr_of(quality[judged, 0] - quality[judged, 1], s_j, w_j)
            for n in N_FEEDBACK:
                if n > len(traffic):
                    continue
                if n == 0:
                    table[n].append([fresh, fresh, fresh, fresh, 0.0])
                    continue
                ev = evidence_of(quality, features, traffic, log, n)
                outcome = learn(ev, None, version, curve=False)
                judged_ev = evidence_of(quality, features, judged, {**log, "chosen": np.zeros(len(judged), int),
                                                                    "propensity": np.ones(len(judged)),
                                                                    "label": np.zeros(len(judged))}, len(judged))
                q_chal = corrected_quality(judged_ev, Correction.of("c", outcome.parameters))
                chal = apgr_of(q_chal[:, 0] - q_chal[:, 1], s_j, w_j)
                nn = apgr_of(nn_gap(quality, features, judged, traffic, log, n, dim), s_j, w_j)
                # the promoted version: a cluster correction, or the residual memory fed every feedback so far
                served = fresh if not outcome.promote else nn if outcome.parameters.nearest_neighbour_residual \
                    else chal
                table[n].append([fresh, chal, served, nn, float(outcome.promote)])
        if not noise:
            ceiling = [full_label_ceiling(quality, features, strong, weak, seed, judged_n, version)
                       for seed in range(seeds)]
            print(f"  ceiling: the correction fitted on both models' outcomes for every traffic prompt "
                  f"({len(items.prompts) - judged_n:,} x 2 labels): APGR {np.mean([c[1] for c in ceiling]):.3f} "
                  f"({np.mean([c[1] - c[0] for c in ceiling]):+.3f})")
        print(f"  {'random labels (noise control)' if noise else 'real outcomes (bandit feedback)'}: APGR on the "
              f"judged prompts, mean of {seeds} seeds (gain over the fresh preference)")
        print(f"  {'feedbacks':>9}  {'fresh':>6}  {'challenger':>17}  {'served (gated)':>17}  {'NN residual':>17}  "
              f"promoted")
        for n, rows in table.items():
            if not rows:
                continue
            m = np.mean(rows, axis=0)
            print(f"  {n:>9}  {m[0]:6.3f}  {m[1]:6.3f} ({m[1] - m[0]:+.3f})  {m[2]:6.3f} ({m[2] - m[0]:+.3f})  "
                  f"{m[3]:6.3f} ({m[3] - m[0]:+.3f})  {int(round(m[4] * len(rows)))}/{len(rows)}", flush=True)


def speed(rows: int, router, items) -> None:
    """The flow's tasks (in process, without Prefect's engine) on `rows` logged decisions with feedback."""
    import pyarrow as pa

    from api.settings import reset_settings
    from storage import events
    from storage.event_schemas import FEEDBACK_SCHEMA, SESSION_SCHEMA
    from storage.store import LocalStore

    data = Path(tempfile.mkdtemp(prefix="switchboard-learning-speed-"))
    os.environ["SWITCHBOARD_DATA_DIR"] = str(data)
    reset_settings()
    try:
        from api.settings import get_settings
        from flows.learning import flow

        settings = get_settings()
        candidates = pair_candidates()
        n_prompts = min(len(items.prompts), 5000)
        feats = [router.featurizer.featurize(p) for p in items.prompts[:n_prompts]]
        quality = np.stack([router.predict_quality(f, candidates) for f in feats]).astype(np.float32)
        dim = router.featurizer.embedding.dim
        vectors = np.stack([f.vector[:dim] for f in feats]).astype(np.float32)
        rng = np.random.default_rng(0)
        pick = rng.integers(0, n_prompts, rows)
        chosen = rng.integers(0, 2, rows)
        keys = ["/".join(STRONG), "/".join(WEAK)]
        outcome = np.where(chosen == 0, items.strong[pick], items.weak[pick]).astype(np.int8)
        ids = [f"s{i:08d}" for i in range(rows)]
        created = np.datetime64("2026-11-25T00:00:00", "us") + np.arange(rows).astype("timedelta64[us]")
        base = {name: pa.nulls(rows, SESSION_SCHEMA.field(name).type) for name in SESSION_SCHEMA.names}
        base.update({
            "session_id": pa.array(ids), "created_at": pa.array(created, pa.timestamp("us", tz="UTC")),
            "user_id": pa.array(["alice"] * rows), "preference_id": pa.array(["pref"] * rows),
            "hashed": pa.array([False] * rows), "eligible": pa.array([keys] * rows),
            "chosen": pa.array([keys[c] for c in chosen]),
            "router_quality": pa.array(list(quality[pick]), pa.list_(pa.float32())),
            "predicted_quality": pa.array(list(quality[pick]), pa.list_(pa.float32())),
            "penalty_position": pa.array([[1.0, 0.0]] * rows, pa.list_(pa.float32())),
            "policy_lambda": pa.array(np.full(rows, 0.1)), "propensity": pa.array(np.full(rows, 0.5)),
            "explored": pa.array([False] * rows),
        })
        events.append(settings.events_dir, "sessions", pa.table(base, schema=SESSION_SCHEMA))
        fb = {name: pa.nulls(rows, FEEDBACK_SCHEMA.field(name).type) for name in FEEDBACK_SCHEMA.names}
        fb.update({"feedback_id": pa.array(ids), "session_id": pa.array(ids), "created_at": base["created_at"],
                   "preference_id": pa.array(["pref"] * rows), "accuracy": pa.array(outcome, pa.int8()),
                   "embedding": pa.array(list(vectors[pick]), pa.list_(pa.float32()))})
        events.append(settings.events_dir, "feedback", pa.table(fb, schema=FEEDBACK_SCHEMA))
        LocalStore(settings.db_path).close()  # migrated, closed: the flow's connect() opens it
        started = time.perf_counter()
        due = flow.find_preferences.fn(None, 200)
        evidence = flow.build_training_table.fn("pref")
        built = time.perf_counter()
        outcome_ = flow.fit_and_evaluate.fn("pref", evidence)
        fitted = time.perf_counter()
        flow.record_version.fn("pref", outcome_)
        done = time.perf_counter()
        print(f"\nlearn-from-traffic on {rows:,} logged decisions ({due}): training table {built - started:.1f} s, "
              f"fit + off-policy evaluation + learning curve {fitted - built:.1f} s, record {done - fitted:.2f} s; "
              f"total {done - started:.1f} s (target <= 60 s); load average {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def left_out_routers(benchmarks: list[str], router_cache: str | None):
    """(benchmark, its GPT-4 vs Mixtral items, the folder of a default router trained without it) for each, training
    the routers `router_cache` does not hold yet (as benchmarks/default_router_unseen.py does); a temporary folder
    is removed once the caller has gone through them all."""
    from benchmarks.default_router_unseen import SHARED, train_without
    from flows.default_router.data import load_all

    pairs = load_all(SHARED / "routellm")
    work = Path(router_cache) if router_cache else Path(tempfile.mkdtemp(prefix="switchboard-lobo-"))
    try:
        for benchmark in benchmarks:
            folder = work / benchmark
            if not (folder / "router.json").exists():
                shutil.rmtree(folder, ignore_errors=True)
                train_without(benchmark, folder, keep_figures=False)
            yield benchmark, pairs[benchmark], folder
    finally:
        if not router_cache:
            shutil.rmtree(work, ignore_errors=True)


def unseen_kinds(benchmark: str, other_n: int = 300) -> dict:
    """name -> (prompts, strong, weak) of the kinds a preference fed `benchmark`'s feedback never saw: a fixed sample
    of `other_n` prompts of the other of GSM8K and MMLU, and MT-Bench's first turns."""
    from benchmarks.default_router_unseen import SHARED
    from flows.default_router.data import load_all

    pairs = load_all(SHARED / "routellm")
    out = {}
    for name in ("mmlu" if benchmark == "gsm8k" else "gsm8k", "mt_bench"):
        items = pairs[name]
        idx = np.sort(np.random.default_rng(11).permutation(len(items.prompts))[:other_n])
        out[name] = ([items.prompts[i] for i in idx], items.strong[idx], items.weak[idx])
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="benchmarks to leave out, comma-separated (default: mmlu,gsm8k in process, "
                                       "gsm8k through the API)")
    parser.add_argument("--seeds", type=int, help="default: 3 in process, 1 through the API")
    parser.add_argument("--judged", type=int, help="judged prompts per seed, at most a quarter (default: 3000 in "
                                                   "process, 300 through the API)")
    parser.add_argument("--through-api", action="store_true",
                        help="through `switchboard serve`: HTTP traffic and feedback, the flow run by Prefect "
                             "(--speed-rows does not apply)")
    parser.add_argument("--speed-rows", type=int, default=100_000, help="0: skip the timing")
    parser.add_argument("--router-cache", help="keep the left-out routers in this folder and reuse them")
    parser.add_argument("--exploration-rate", type=float, default=0.0,
                        help="--through-api: the callers' exploration_rate (default 0: none configured, issue 33)")
    parser.add_argument("--checkpoints", help="--through-api: feedback counts at which the flow runs and the judged "
                                              "prompts are routed, comma-separated (default 0,250,500,1000,2000)")
    parser.add_argument("--first-seed", type=int, default=0, help="--through-api: seeds from this one on")
    parser.add_argument("--labels", default="real,random",
                        help="--through-api: which callers, of real, random (a fair coin) and none (traffic without "
                             "feedback: the service's own drift)")
    parser.add_argument("--unseen", action="store_true",
                        help="--through-api: also route kinds without feedback "
                             "(benchmarks/learning_from_traffic_api.py)")
    args = parser.parse_args()
    only = args.only or ("gsm8k" if args.through_api else "mmlu,gsm8k")
    judged = args.judged or (300 if args.through_api else 3000)
    seeds = args.seeds or (1 if args.through_api else 3)

    from api.routing.default_router import load_default_router

    rate = args.exploration_rate if args.through_api else RATE
    print(f"load average {os.getloadavg()[0]:.1f}; exploration_rate {rate}; cost_quality_tradeoff 5", flush=True)
    router = None
    for benchmark, items, folder in left_out_routers([b for b in only.split(",") if b], args.router_cache):
        judged_n = min(judged, len(items.prompts) // 4)
        if args.through_api:
            # lazy: the service harness (tests/support) only for this mode
            from benchmarks.learning_from_traffic_api import curve_through_api

            checkpoints = tuple(int(n) for n in args.checkpoints.split(",")) if args.checkpoints else N_FEEDBACK
            curve_through_api(benchmark, items, folder, folder / "model_benchmarks.csv", judged_n, checkpoints,
                              seeds, tuple(args.labels.split(",")), args.first_seed, args.exploration_rate,
                              unseen_kinds(benchmark) if args.unseen else None)
            continue
        router = load_default_router(folder, folder / "model_benchmarks.csv")
        curve(benchmark, items, router, seeds, judged_n)
    if args.speed_rows and router is not None and not args.through_api:
        speed(args.speed_rows, router, items)
    return 0


if __name__ == "__main__":
    sys.exit(main())
