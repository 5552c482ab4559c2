"""Custom routers on public model pools: the floor against the best single model, held out.

    nice -n 10 .venv/bin/python -m benchmarks.custom_router_pools [--pools mmlu_pro,zeroeval,routerdc] [--no-lobo]
    nice -n 10 .venv/bin/python -m benchmarks.custom_router_pools --http --pools mmlu_pro   # through the HTTP API

Each pool is uploaded as a user would upload it (prompts, one 0/1 or pass-rate score column per model, list-like
prices) and trained with the training flow's own functions, offline (flows/custom_router/*: e5 teacher, lexicon,
linear / XGBoost / kNN heads, stacker, floor, schedule), written as the flow writes its artefact folder and served
by api.custom_router.model.CustomRouter, the class modelSelect uses. "before" is the same router without its floor
(q = the stacker's calibrated prediction, its schedule calibrated on those predictions: main's learner before
issue 21); "after" is the router as trained now.

Data (../shared/data, each with its data card): MMLU-Pro's non-MMLU questions (5,138 x 29 models, 0/1), ZeroEval
CRUX (800) and MATH level 5 (598) for models run on both, RouterDC's training files (7 models; MMLU, GSM8K, ARC,
HumanEval; CMMLU left out: its licence). Nothing here is tuned on what it reports: the floor's settings were fixed
before the first run of this benchmark.

Splits. (1) Held-out fold: a prompt is held out when sha256(prompt) % 5 == 0 (flows.default_router.data.fold_of);
the router trains on the other four fifths. A random split of one upload is in-distribution. (2) Leave one
benchmark out, inside a pool of several benchmarks: train on the other benchmarks' rows, route the left-out one.

Prices: per model, a catalogue entry (api/catalogue) of the same model, else of the same family and size class, else
the same tier's successor (PRICED_AS; e.g. Phi-3-mini as a 3B Llama, claude-3-5-sonnet as claude-sonnet-4-5, whose
list price is the same). RouterDC's seven 7-8B models all get one price (its data card), so no cost figure there.
Cost of a request = prompt tokens (chars / 4) x input price + 350 output tokens x output price (the policy's
default answer length).

Prints per pool: held-out accuracy at t = 0 before / after vs the best single model (the one best on the training
rows, and the one best on the held-out rows), the oracle, the cheapest setting within 1 point of the best single
model and its cost share, held-out accuracy against a shrinkage common to all models (the curve in
docs/routing.md), and per left-out benchmark the same t = 0 figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the flow sets it (flows/train_custom_router.py)

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from api.catalogue import load_catalogue  # noqa: E402
from api.custom_router.floor import assign, clip_quality  # noqa: E402
from api.custom_router.model import load_custom_router  # noqa: E402
from api.routing.default_router import DEFAULT_ARTEFACT_DIR  # noqa: E402
from api.routing.features import Featurizer  # noqa: E402
from api.settings import get_settings  # noqa: E402
from flows.custom_router import calibration, floor, pipeline  # noqa: E402
from flows.default_router.data import fold_of  # noqa: E402

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"

MMLU_PRO = {  # nine mid-range models, 36-49 % on these questions: near-equal, as in issue 21's losing pool
    "jamba-1.5-large": ("ai21", "jamba-1.5-large"),
    "mathstral-7B": ("togetherai", "mistralai/Mistral-7B-Instruct-v0.3"),
    "Meta-Llama-3-70B": ("togetherai", "meta-llama/Meta-Llama-3-70B-Instruct-Turbo"),
    "Meta-Llama-3_1-70B": ("togetherai", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo"),
    "Meta-Llama-3_1-8B-Instruct": ("togetherai", "meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo"),
    "Qwen1.5-110B": ("togetherai", "Qwen/Qwen2.5-72B-Instruct"),
    "Qwen1.5-72B-Chat": ("togetherai", "Qwen/Qwen2-72B-Instruct"),
    "Mixtral-8x7B-Instruct-v0.1": ("togetherai", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
    "Phi-3-mini-4k-instruct": ("togetherai", "meta-llama/Llama-3.2-3B-Instruct"),
}
ZEROEVAL = {  # nine models run on both CRUX and MATH L5; the top three within 2 points over the two mixed
    "gpt-4o-2024-08-06": ("openai", "gpt-4o-2024-08-06"),
    "claude-3-5-sonnet-20241022": ("anthropic", "claude-sonnet-4-5"),
    "gemini-1.5-pro-exp-0827": ("google", "gemini-2.5-pro"),
    "gpt-4o-mini-2024-07-18": ("openai", "gpt-4o-mini-2024-07-18"),
    "Qwen2.5-72B-Instruct": ("togetherai", "Qwen/Qwen2.5-72B-Instruct"),
    "Qwen2.5-32B-Instruct": ("togetherai", "Qwen/Qwen2.5-Coder-32B-Instruct"),
    "Mistral-Large-2": ("mistral", "mistral-large-latest"),
    "deepseek-v2.5-0908": ("deepseek", "deepseek-chat"),
    "Qwen2.5-7B-Instruct": ("togetherai", "Qwen/Qwen2.5-7B-Instruct-Turbo"),
}
ROUTERDC_FILES = {"mmlu": "mmlu_train.json", "gsm8k": "gsm8k-train.json", "arc": "arc_challenge_train.json",
                  "humaneval": "humaneval_train.json"}


class Pool:
    def __init__(self, name: str, prompts: list[str], models: list[str], y: np.ndarray, bench: np.ndarray,
                 prices: np.ndarray):
        self.name, self.prompts, self.models, self.y, self.bench, self.prices = name, prompts, models, y, bench, prices


def _prices(priced_as: dict) -> np.ndarray:
    catalogue = load_catalogue()
    out = []
    for provider, model in priced_as.values():
        entry = catalogue.get(provider, model)
        assert entry is not None, (provider, model)
        out.append((entry.input_price, entry.output_price))
    return np.array(out)


def load_mmlu_pro() -> Pool:
    with (SHARED / "mmlu_pro" / "mmlu_pro_nonmmlu.csv").open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if all(r[m] in ("0", "1") for m in MMLU_PRO)]
    y = np.array([[float(r[m]) for m in MMLU_PRO] for r in rows])
    bench = np.array([r["src"].split("-")[0] for r in rows])  # stemez, theoremQA, scibench
    return Pool("MMLU-Pro (non-MMLU), 9 models", [r["prompt"] for r in rows], list(MMLU_PRO), y, bench,
                _prices(MMLU_PRO))


def load_zeroeval() -> Pool:
    prompts, ys, bench = [], [], []
    for name in ("crux", "math_l5"):
        with (SHARED / "zeroeval" / f"{name}.csv").open(newline="", encoding="utf-8") as f:
            for r in csv.DictReader(f):
                if all(r[m] in ("0", "1") for m in ZEROEVAL):
                    prompts.append(r["prompt"])
                    ys.append([float(r[m]) for m in ZEROEVAL])
                    bench.append(name)
    return Pool("ZeroEval CRUX + MATH L5, 9 models", prompts, list(ZEROEVAL), np.array(ys), np.array(bench),
                _prices(ZEROEVAL))


def load_routerdc() -> Pool:
    prompts, ys, bench, models = [], [], [], None
    for name, file in ROUTERDC_FILES.items():
        for item in json.loads((SHARED / "routerdc" / file).read_text(encoding="utf-8")):
            models = models or list(item["scores"])
            prompts.append(item["question"])
            ys.append([float(item["scores"][m]) for m in models])
            bench.append(name)
    return Pool("RouterDC MMLU + GSM8K + ARC + HumanEval, 7 models", prompts, models, np.array(ys),
                np.array(bench), np.tile([0.2, 0.2], (len(models), 1)))


def train(prompts: list[str], y: np.ndarray, prices: np.ndarray, folder: Path, log=lambda *_: None):
    """The flow's steps (flows/custom_router/pipeline.py) without Prefect; returns the served router, the floor's
    report and the schedule of the same router without its floor (the stacker's predictions: "before")."""
    models = [{"key": f"pool/m{m}", "input_price": float(prices[m, 0]), "output_price": float(prices[m, 1])}
              for m in range(y.shape[1])]
    folder.mkdir(parents=True, exist_ok=True)
    trained = pipeline.fit(prompts, y, models, folder, get_settings().custom_router_e5_max_chars, log=log)
    spec = pipeline.router_spec(trained, models, job_id=folder.name, preference_id="bench", language="english")
    pipeline.write_artefact(folder, spec, trained, y)
    router = load_custom_router(folder, Featurizer.load(DEFAULT_ARTEFACT_DIR))
    return router, trained.floor_report, calibration.calibrate_schedule(trained.stacked, trained.cost)


def predict(router, prompts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(heads' predictions p, served q with the floor, (n,) cluster) for new prompts, as modelSelect computes them."""
    vectors = router.encoder.vectors(prompts)
    p = np.array([router.heads(v.astype(np.float64)) for v in vectors])
    q = np.array([router.quality_of_all(v) for v in vectors])
    cluster = assign(vectors[:, router.encoder.knn_columns], router.floor.centroids)
    return p, q, cluster


def t_curve(q: np.ndarray, y: np.ndarray, cost: np.ndarray, schedule) -> list[tuple[float, float]]:
    """(accuracy, mean cost) at t = 0..10."""
    lambdas = list(schedule)[:10] + [float("inf")]
    out = []
    for lam in lambdas:
        pick = calibration.choices(q, cost, lam)
        out.append((float(y[np.arange(len(y)), pick].mean()), float(cost[np.arange(len(y)), pick].mean())))
    return out


def cheapest_within_1pt(curve, best_q: float, best_cost: float) -> str:
    ok = [(c, t, q) for t, (q, c) in enumerate(curve) if q >= best_q - 0.01]
    if not ok:
        return "none"
    c, t, q = min(ok)
    return f"t={t} ({q:.4f}, {c / best_cost:.0%} of its cost)"


def run_split(pool: Pool, train_rows: np.ndarray, test_rows: np.ndarray, work: Path, label: str,
              curve: bool) -> dict:
    started = time.perf_counter()
    prompts = [pool.prompts[i] for i in train_rows]
    router, report, before_schedule = train(prompts, pool.y[train_rows], pool.prices, work)
    seconds = time.perf_counter() - started
    test_prompts = [pool.prompts[i] for i in test_rows]
    y = pool.y[test_rows]
    cost = calibration.request_costs(np.array([len(p) for p in test_prompts]), pool.prices[:, 0],
                                     pool.prices[:, 1])
    p, q, cluster = predict(router, test_prompts)
    before = t_curve(p, y, cost, before_schedule)
    after = t_curve(q, y, cost, router.schedule)
    train_best = int(np.argmax(pool.y[train_rows].mean(axis=0)))
    test_best = int(np.argmax(y.mean(axis=0)))
    out = {"label": label, "train_rows": len(train_rows), "test_rows": len(test_rows), "seconds": seconds,
           "before_t0": before[0][0], "after_t0": after[0][0],
           "best_single_train_choice": float(y[:, train_best].mean()),
           "best_single_heldout": float(y[:, test_best].mean()), "best_single_name": pool.models[test_best],
           "oracle": float(y.max(axis=1).mean()), "cv": report}
    best_cost = float(cost[:, test_best].mean())
    out["before_cheapest"] = cheapest_within_1pt(before, out["best_single_heldout"], best_cost)
    out["after_cheapest"] = cheapest_within_1pt(after, out["best_single_heldout"], best_cost)
    out["after_curve"] = after
    if curve:  # held-out accuracy at t = 0 against one shrinkage for every model, the clusters as trained
        f = router.floor
        out["shrinkage_curve"] = {}
        for s in floor.S_GRID + (1.5, 2.0):
            qs = clip_quality(f.mu[cluster] + s * (p - f.pbar[cluster]))
            out["shrinkage_curve"][s] = float(y[np.arange(len(y)), qs.argmax(axis=1)].mean())
    return out


def show(r: dict) -> None:
    cv = r["cv"]
    print(f"  {r['label']}: trained on {r['train_rows']} rows in {r['seconds']:.0f} s, routed {r['test_rows']}")
    print(f"    t=0 accuracy: before {r['before_t0']:.4f}   after {r['after_t0']:.4f}   best single "
          f"{r['best_single_heldout']:.4f} ({r['best_single_name']}; the training rows' best scores "
          f"{r['best_single_train_choice']:.4f})   oracle {r['oracle']:.4f}")
    print(f"    after - best single: {100 * (r['after_t0'] - r['best_single_heldout']):+.2f} points; "
          f"before - best single: {100 * (r['before_t0'] - r['best_single_heldout']):+.2f} points")
    verdict = "routes as the best single model" if cv["routes_as_best_single_model_at_t0"] else "routes by prompt"
    print(f"    training-time nested CV: router {cv['cv_router_quality_t0']:.4f} vs best single "
          f"{cv['best_single_quality']:.4f} -> {verdict}"
          f" (learned: {cv['learned']['clusters']} clusters, s = {cv['learned']['shrinkage']})")
    print(f"    cheapest setting within 1 point of the best single model: before {r['before_cheapest']}; "
          f"after {r['after_cheapest']}")
    if "shrinkage_curve" in r:
        print("    held-out t=0 accuracy vs a common shrinkage s: "
              + ", ".join(f"s={s:g}: {a:.4f}" for s, a in r["shrinkage_curve"].items()))


def through_http(pool: Pool) -> None:
    """The held-out split of one pool through a real `switchboard serve`: upload the training rows as custom models
    with their prices, wait for the router, route every held-out prompt at t = 0..10 with modelSelect."""
    # lazy: only this mode starts the service (and imports the test harness that does it)
    import httpx

    from benchmarks.custom_router_common import csv_of, route, serve, training_metrics, upload, wait_ready

    held = np.array([fold_of(p) == 0 for p in pool.prompts])
    train_rows, test_rows = np.flatnonzero(~held), np.flatnonzero(held)
    providers = [{"provider": "pool", "model": m.replace("/", "_"), "is_custom": True,
                  "input_price": float(pool.prices[j, 0]), "output_price": float(pool.prices[j, 1]),
                  "context_length": 32768, "latency": 1.0} for j, m in enumerate(pool.models)]
    keys = [f"pool/{p['model']}" for p in providers]
    data = csv_of([pool.prompts[i] for i in train_rows], keys, pool.y[train_rows].tolist())
    svc = serve()
    try:
        with httpx.Client(timeout=60) as client:
            started = time.perf_counter()
            pid, _ = upload(svc, data, providers)
            wait_ready(client, svc, pid, providers)
            live_s = time.perf_counter() - started
            picks = np.array([[keys.index(route(client, svc, pid, pool.prompts[i], providers, t)) for i in test_rows]
                              for t in range(11)])
            summary = training_metrics(svc, pid).get("summary", {})
    finally:
        svc.stop()
    y = pool.y[test_rows]
    cost = calibration.request_costs(np.array([len(pool.prompts[i]) for i in test_rows]), pool.prices[:, 0],
                                     pool.prices[:, 1])
    rows = np.arange(len(test_rows))
    curve = [(float(y[rows, picks[t]].mean()), float(cost[rows, picks[t]].mean())) for t in range(11)]
    best = int(np.argmax(y.mean(axis=0)))
    print(f"\n{pool.name} through the HTTP API: {len(train_rows)} rows uploaded, live after {live_s:.1f} s; "
          f"{len(test_rows)} held-out prompts x 11 settings through modelSelect")
    print(f"  t=0 accuracy {curve[0][0]:.4f} vs best single {y[:, best].mean():.4f} ({pool.models[best]}): "
          f"{100 * (curve[0][0] - y[:, best].mean()):+.2f} points; oracle {y.max(axis=1).mean():.4f}")
    print("  " + ", ".join(f"t={t}: {q:.4f} ({c / cost[:, best].mean():.0%})" for t, (q, c) in enumerate(curve)))
    print(f"  cheapest setting within 1 point: "
          f"{cheapest_within_1pt(curve, float(y[:, best].mean()), float(cost[:, best].mean()))}")
    print(f"  the flow's record: {summary}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pools", default="mmlu_pro,zeroeval,routerdc")
    parser.add_argument("--no-lobo", action="store_true", help="skip leave-one-benchmark-out")
    parser.add_argument("--http", action="store_true", help="the held-out split of the first pool only, uploaded "
                                                            "and routed through a real `switchboard serve`")
    args = parser.parse_args()
    threadpool_limits(limits=1, user_api="blas")  # as the flow (flows/train_custom_router.py)
    loaders = {"mmlu_pro": load_mmlu_pro, "zeroeval": load_zeroeval, "routerdc": load_routerdc}
    if args.http:
        through_http(loaders[args.pools.split(",")[0]]())
        return 0
    work = Path(tempfile.mkdtemp(prefix="switchboard-pools-"))
    print(f"teacher budget: {get_settings().custom_router_e5_max_chars:,} characters; load average "
          f"{os.getloadavg()[0]:.1f}")
    for key in args.pools.split(","):
        pool = loaders[key]()
        print(f"\n{pool.name}: {len(pool.prompts)} prompts; benchmarks "
              + ", ".join(f"{b} {int((pool.bench == b).sum())}" for b in dict.fromkeys(pool.bench)))
        held = np.array([fold_of(p) == 0 for p in pool.prompts])
        show(run_split(pool, np.flatnonzero(~held), np.flatnonzero(held), work / f"{key}-heldout",
                       "held-out fold (sha256 % 5 == 0)", curve=True))
        if args.no_lobo:
            continue
        for b in dict.fromkeys(pool.bench):
            left = pool.bench == b
            show(run_split(pool, np.flatnonzero(~left), np.flatnonzero(left), work / f"{key}-lobo-{b}",
                           f"leave out {b}", curve=False))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
