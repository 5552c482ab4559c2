"""Custom routers on kinds of prompt their upload lacks: the floor's neighbours and familiarity threshold (issue 33).

    nice -n 10 .venv/bin/python -m benchmarks.custom_router_familiarity [--pools routerdc5,mmlu_pro,zeroeval]

Each pool is trained with the training flow's own steps (flows/custom_router/pipeline.py, as
benchmarks/custom_router_pools.py does), written as the flow writes its artefact folder and served by
api.custom_router.model.CustomRouter (what modelSelect calls, familiarity and neighbours included). "main's floor"
is the floor of issue 21 fitted on the same heads' predictions (no neighbours' prior, no threshold).

Pools (../shared/data): `routerdc5` RouterDC's five training files (CMMLU included, as the issue's judge uploaded
them; measured only, nothing kept: CMMLU's licence), `routerdc` the four without CMMLU, `mmlu_pro` and `zeroeval`
(benchmarks/custom_router_pools.py). Splits: in distribution, the held-out fold (sha256 % 5 == 0); out of
distribution, leave one benchmark out (train on the others, route every row of the left-out one). Nothing is tuned
on what is reported: the neighbours' prior and the threshold are chosen by each training on its own rows.

Figures at cost_quality_tradeoff 0, in points over the best single model:
- by rows: accuracy over the routed rows against the model best on them (hindsight);
- by benchmark (RouterDC's figure): accuracy averaged over benchmarks against the model whose benchmark average is
  best (hindsight), for the held-out fold and for the left-out benchmarks pooled;
plus, per left-out benchmark, the share of its prompts the threshold sent to the upload's best single model.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the flow sets it (flows/train_custom_router.py)

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from api.custom_router.model import load_custom_router  # noqa: E402
from benchmarks import custom_router_pools as pools  # noqa: E402
from flows.custom_router import floor, pipeline  # noqa: E402
from flows.custom_router.neighbours import NeighbourTable  # noqa: E402
from flows.default_router.data import fold_of  # noqa: E402

ROUTERDC5 = dict(pools.ROUTERDC_FILES, cmmlu="cmmlu_train.json")


def load_routerdc5() -> pools.Pool:
    prompts, ys, bench, models = [], [], [], None
    for name, file in ROUTERDC5.items():
        for item in json.loads((pools.SHARED / "routerdc" / file).read_text(encoding="utf-8")):
            models = models or list(item["scores"])
            prompts.append(item["question"])
            ys.append([float(item["scores"][m]) for m in models])
            bench.append(name)
    return pools.Pool("RouterDC's five training files, 7 models", prompts, models, np.array(ys), np.array(bench),
                      np.tile([0.2, 0.2], (len(models), 1)))


NAMES = {"main": "main's floor", "served": "this build"}
LOADERS = {"routerdc5": load_routerdc5, "routerdc": pools.load_routerdc, "mmlu_pro": pools.load_mmlu_pro,
           "zeroeval": pools.load_zeroeval}


def mains_floor(trained: pipeline.Trained, y: np.ndarray, prompts: list[str]) -> floor.Floor:
    """Issue 21's floor on the same heads: clusters and shrinkage only."""
    saved = floor.LOCAL_PRIORS
    floor.LOCAL_PRIORS = (0.0,)
    try:
        folds = pipeline.training.fold_ids(prompts, trained.cfg.folds)
        chosen, _, _ = floor.fit_floor(trained.stacked, y, trained.emb, folds, log=lambda *_: None,
                                       table=NeighbourTable(trained.emb, y, folds))
        return chosen
    finally:
        floor.LOCAL_PRIORS = saved


def run_split(pool: pools.Pool, train_rows: np.ndarray, test_rows: np.ndarray, folder: Path) -> dict:
    started = time.perf_counter()
    prompts = [pool.prompts[i] for i in train_rows]
    y = pool.y[train_rows]
    models = [{"key": f"pool/m{m}", "input_price": float(pool.prices[m, 0]),
               "output_price": float(pool.prices[m, 1])} for m in range(y.shape[1])]
    folder.mkdir(parents=True, exist_ok=True)
    trained = pipeline.fit(prompts, y, models, folder, pools.get_settings().custom_router_e5_max_chars,
                           log=lambda *_: None)
    spec = pipeline.router_spec(trained, models, job_id=folder.name, preference_id="bench", language="english")
    pipeline.write_artefact(folder, spec, trained, y)
    router = load_custom_router(folder)
    seconds = time.perf_counter() - started
    vectors = router.encoder.vectors([pool.prompts[i] for i in test_rows])
    served = np.array([router.quality_of_all(v).argmax() for v in vectors])  # modelSelect's t = 0 path
    heads = np.array([router.heads(v.astype(np.float64)) for v in vectors])
    emb = vectors[:, router.encoder.knn_columns]
    main = mains_floor(trained, y, prompts).predict(heads, emb).argmax(axis=1)
    near = [router.references.around(e) for e in emb] if router.references is not None else []
    caught = (np.array([router.floor.unfamiliar(n)[0] for n in near])
              if near and router.floor.unfamiliar(near[0]) is not None else np.zeros(len(test_rows), bool))
    return {"served": served, "main": main, "caught": caught, "seconds": seconds, "report": trained.floor_report,
            "train_best": int(np.argmax(y.mean(axis=0)))}


def gains(bench: np.ndarray, y: np.ndarray, picks: np.ndarray) -> tuple[float, float]:
    """(by rows, by benchmark): points over the best single model in hindsight."""
    rows = np.arange(len(y))
    by_rows = y[rows, picks].mean() - y.mean(axis=0).max()
    names = list(dict.fromkeys(bench))
    router = np.mean([y[rows[bench == b], picks[bench == b]].mean() for b in names])
    single = np.mean([y[bench == b].mean(axis=0) for b in names], axis=0).max()
    return 100 * float(by_rows), 100 * float(router - single)


def describe(report: dict) -> str:
    familiar = report["familiarity"]
    threshold = familiar.get("threshold")
    return (f"{report['clusters']} clusters, neighbours' prior {report['local_prior']:g}, threshold "
            + ("none" if threshold is None else f"{threshold:.3f} ({familiar['threshold_quantile']:.0%} of its rows)")
            + (f" [{familiar['why_none']}]" if "why_none" in familiar else ""))


def run_pool(key: str, work: Path) -> None:
    pool = LOADERS[key]()
    print(f"\n{pool.name}: {len(pool.prompts)} prompts; "
          + ", ".join(f"{b} {int((pool.bench == b).sum())}" for b in dict.fromkeys(pool.bench)), flush=True)
    held = np.array([fold_of(p) == 0 for p in pool.prompts])
    test = np.flatnonzero(held)
    r = run_split(pool, np.flatnonzero(~held), test, work / f"{key}-heldout")
    b, y = pool.bench[test], pool.y[test]
    for label in ("main", "served"):
        g_rows, g_bench = gains(b, y, r[label])
        print(f"  in distribution (held-out fold, {len(test)} rows), {NAMES[label]:12}: {g_rows:+.2f} points by rows, "
              f"{g_bench:+.2f} by benchmark", flush=True)
    print(f"    trained in {r['seconds']:.0f} s: {describe(r['report'])}; falls back on {r['caught'].mean():.1%}")
    picks = {"main": [], "served": []}
    order = []
    for name in dict.fromkeys(pool.bench):
        left = np.flatnonzero(pool.bench == name)
        r = run_split(pool, np.flatnonzero(pool.bench != name), left, work / f"{key}-lobo-{name}")
        y = pool.y[left]
        acc = {k: float(y[np.arange(len(y)), r[k]].mean()) for k in picks}
        print(f"  {name} left out ({len(left)} rows): this build {acc['served']:.4f}, main's floor "
              f"{acc['main']:.4f}, the upload's best single model {y[:, r['train_best']].mean():.4f}, best on it "
              f"{y.mean(axis=0).max():.4f}; falls back on {r['caught'].mean():.0%}; {describe(r['report'])}",
              flush=True)
        for k in picks:
            picks[k].append(r[k])
        order.append(left)
    rows = np.concatenate(order)
    for label in ("main", "served"):
        _, g_bench = gains(pool.bench[rows], pool.y[rows], np.concatenate(picks[label]))
        print(f"  left-out benchmarks pooled, {NAMES[label]}: {g_bench:+.2f} points by benchmark over the best single "
              "model", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="routerdc5,mmlu_pro,zeroeval")
    args = parser.parse_args()
    threadpool_limits(limits=1, user_api="blas")  # as the flow (flows/train_custom_router.py)
    work = Path(tempfile.mkdtemp(prefix="switchboard-familiarity-"))
    print(f"load average {os.getloadavg()[0]:.1f}")
    for key in args.pools.split(","):
        run_pool(key, work)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
