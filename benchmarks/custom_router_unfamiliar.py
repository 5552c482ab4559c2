"""What a custom router should do with a prompt of a kind its upload lacks (issue 33): the rules tried.

    nice -n 10 .venv/bin/python -m benchmarks.custom_router_unfamiliar [--pools routerdc5,mmlu_pro,zeroeval]
        [--cache DIR]

Each split is trained once with the flow's steps (flows/custom_router/pipeline.py); `--cache` keeps what the rules
need of it (the stacker's out-of-fold predictions, kNN features, folds; the held-out prompts' heads and features)
as DIR/<pool>-<split>.npz and reuses it. Every rule then refits the floor (flows/custom_router/floor.py) on the
training rows and routes the held-out prompts at cost_quality_tradeoff 0. Splits and pools as
benchmarks/custom_router_familiarity.py: the held-out fold (in distribution) and each benchmark left out in turn.

Rules (what an unfamiliar prompt gets; "unfamiliar" = familiarity below a threshold learned on the upload):
- served: this build (flows/custom_router/familiarity.py: the threshold must gain across the upload's k-means
  kinds left out, SIGNIFICANCE standard errors over kinds);
- mean gate: the previous rule (the mean over kinds left out alone decides);
- none: no threshold; the floor routes every prompt;
- always/<fallback>: every prompt gets the fallback: `rows` the upload's best single model, `kinds` the model best
  on the mean over the upload's kinds (each kind weighs the same), `near30` the prompt's 10 nearest training
  prompts' quality with the upload's means as 30 pseudo-rows;
- labels/<fallback>: the threshold learned with the upload's benchmarks as kinds (an upload with a benchmark
  column) instead of k-means kinds, by the mean gate (`gated`: with the gate across kinds), the fallback scored and
  served being the rows' best model (`rows`) or the model best on the mean over benchmarks (`kinds`);
- lexical a: the floor's neighbours found on (1 - a) x cosine of the kNN features + a x cosine of hashed word and
  character n-grams (api/selection/lexical.py), no threshold.
The choosing pool is RouterDC's (routerdc5); MMLU-Pro's and ZeroEval's figures are reported untouched.
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as the flow sets it (flows/train_custom_router.py)

import numpy as np  # noqa: E402
import scipy.sparse as sparse  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from api.custom_router.floor import OFF  # noqa: E402
from api.custom_router.model import load_custom_router  # noqa: E402
from api.custom_router.neighbours import Neighbourhood, nearest, unit  # noqa: E402
from api.selection.lexical import DIM, featurize  # noqa: E402
from benchmarks import custom_router_familiarity as bench  # noqa: E402
from benchmarks import custom_router_pools as pools  # noqa: E402
from flows.custom_router import familiarity, pipeline  # noqa: E402
from flows.custom_router import floor as floor_fit  # noqa: E402
from flows import kinds_left_out  # noqa: E402
from flows.custom_router.neighbours import NeighbourTable, outside  # noqa: E402
from flows.default_router.data import fold_of  # noqa: E402

RULES = ("served", "mean gate", "none", "always/rows", "always/kinds", "always/near30", "labels/rows", "labels/kinds",
         "labels/kinds gated", "lexical 0.5", "lexical 1")


def trained_split(pool: pools.Pool, train: np.ndarray, test: np.ndarray, path: Path) -> dict:
    if path.exists():
        return dict(np.load(path))
    prompts, y = [pool.prompts[i] for i in train], pool.y[train]
    models = [{"key": f"pool/m{m}", "input_price": float(pool.prices[m, 0]),
               "output_price": float(pool.prices[m, 1])} for m in range(y.shape[1])]
    folder = Path(tempfile.mkdtemp(prefix="switchboard-unfamiliar-"))
    trained = pipeline.fit(prompts, y, models, folder, pools.get_settings().custom_router_e5_max_chars,
                           log=lambda *_: None)
    pipeline.write_artefact(folder, pipeline.router_spec(trained, models, job_id="bench", preference_id="bench",
                                                         language="english"), trained, y)
    router = load_custom_router(folder)
    vectors = router.encoder.vectors([pool.prompts[i] for i in test])
    out = {"train": train, "test": test, "stacked": trained.stacked, "emb": trained.emb, "y": y,
           "folds": pipeline.training.fold_ids(prompts, trained.cfg.folds),
           "test_heads": np.array([router.heads(v.astype(np.float64)) for v in vectors]),
           "test_emb": vectors[:, router.encoder.knn_columns]}
    np.savez(path, **out)
    return out


def fallback_picks(mode: str, y: np.ndarray, kind: np.ndarray, near: Neighbourhood) -> np.ndarray:
    n = len(near.familiarity)
    if mode == "rows":
        return np.full(n, int(y.mean(axis=0).argmax()))
    if mode == "kinds":
        return np.full(n, kind_balanced_best(y, kind))
    prior = float(mode.removeprefix("near"))
    return ((near.sums + prior * y.mean(axis=0)) / (near.count[:, None] + prior)).argmax(axis=1)


def kind_balanced_best(y: np.ndarray, kind: np.ndarray) -> int:
    return int(np.mean([y[kind == g].mean(axis=0) for g in np.unique(kind)], axis=0).argmax())


def learned_threshold(served, d: dict, nested, table, kind: np.ndarray | None, gate: bool,
                      balanced: bool = False) -> float:
    """The threshold familiarity.learn_threshold would choose with these kinds, with or without the gate;
    `balanced`: the fallback scored is the model best on the mean over kinds (else the rows' best)."""
    if kind is None or len(np.unique(kind)) < 2:
        return OFF
    y, emb, p = d["y"], d["emb"], d["stacked"]
    kinds_out = familiarity.left_out(served, p, y, emb, kind)
    if balanced:
        for k in kinds_out:
            k["fallback"] = kind_balanced_best(y[~k["rows"]], kind[~k["rows"]])
    own = table.own_fold_out()
    candidates = [OFF] + [float(np.quantile(own.familiarity, q)) for q in familiarity.THRESHOLD_QUANTILES]
    saved = kinds_left_out.SIGNIFICANCE
    kinds_left_out.SIGNIFICANCE = saved if gate else -1e9  # the mean gate: any mean gain over kinds passes
    try:
        best = kind_balanced_best(y, kind) if balanced else int(y.mean(axis=0).argmax())
        return familiarity.choose(candidates, kinds_out, y, nested.argmax(axis=1), best, own.familiarity,
                                  np.ones(len(y), dtype=bool))
    finally:
        kinds_left_out.SIGNIFICANCE = saved


def lexical_matrix(texts: list[str]):
    rows, cols, vals = [], [], []
    for i, text in enumerate(texts):
        idx, v = featurize(text)  # a unit row: the cosine of two prompts is one sparse product
        rows += [i] * len(idx)
        cols += idx.tolist()
        vals += v.tolist()
    return sparse.csr_matrix((vals, (rows, cols)), shape=(len(texts), DIM), dtype=np.float32)


def rules(pool: pools.Pool, d: dict, lexical) -> dict[str, tuple[np.ndarray, float]]:
    """{rule: (t = 0 picks of the held-out prompts, share that fell back)}."""
    y, emb, p, folds, te_emb, heads = d["y"], d["emb"], d["stacked"], d["folds"], d["test_emb"], d["test_heads"]
    table = NeighbourTable(emb, y, folds)
    served, report, nested = floor_fit.fit_floor(p, y, emb, folds, log=lambda *_: None, table=table)
    near = outside(te_emb, emb, y)
    routed = served.predict(heads, te_emb, near).argmax(axis=1)
    single = report["routes_as_best_single_model_at_t0"]
    kmeans = None if single else familiarity.kinds(emb, len(y))
    labels = None if single else np.unique(pool.bench[d["train"]], return_inverse=True)[1]
    out = {"none": (routed, 0.0)}
    for name, kind, gate, mode in (("served", kmeans, True, "rows"), ("mean gate", kmeans, False, "rows"),
                                   ("labels/rows", labels, False, "rows"), ("labels/kinds", labels, False, "kinds"),
                                   ("labels/kinds gated", labels, True, "kinds")):
        away = near.familiarity < learned_threshold(served, d, nested, table, kind, gate, balanced=mode == "kinds")
        fb = fallback_picks(mode, y, kind if kind is not None else np.zeros(len(y), int), near)
        out[name] = (np.where(away, fb, routed), float(away.mean()))
    groups = familiarity.kinds(emb, len(y))
    for mode in ("rows", "kinds", "near30"):
        out[f"always/{mode}"] = (fallback_picks(mode, y, groups if groups is not None else np.zeros(len(y), int),
                                                near), 1.0)
    for a in (0.5, 1.0):
        lex_train, lex_test = lexical[d["train"]], lexical[d["test"]]
        unit_emb = unit(emb)
        lex_table = NeighbourTable(emb, y, folds, lambda i, j, a=a, u=unit_emb, lex=lex_train: (
            (1 - a) * (u[i:j] @ u.T) + a * (lex[i:j] @ lex.T).toarray()))
        floor_a, _, _ = floor_fit.fit_floor(p, y, emb, folds, log=lambda *_: None, table=lex_table)
        sims = (1 - a) * (unit(te_emb) @ unit(emb).T) + a * (lex_test @ lex_train.T).toarray()
        out[f"lexical {a:g}"] = (floor_a.predict(heads, te_emb, nearest(sims, y)).argmax(axis=1), 0.0)
    return out


def mmlu_pro_labels(column: str) -> np.ndarray:
    """MMLU-Pro's `category` or `src` of each row of pools.load_mmlu_pro (same file, same filter, same order)."""
    with (pools.SHARED / "mmlu_pro" / "mmlu_pro_nonmmlu.csv").open(newline="", encoding="utf-8") as f:
        return np.array([r[column] for r in csv.DictReader(f) if all(r[m] in ("0", "1") for m in pools.MMLU_PRO)])


def label_best(pool: pools.Pool, labels: np.ndarray, train: np.ndarray, test: np.ndarray) -> np.ndarray:
    """Each held-out row sent to the model best on its label in the training rows (30 pseudo-rows of the mean):
    what routing by a label the router never sees would score."""
    prior = pool.y[train].mean(axis=0)
    best = {}
    for label in np.unique(labels[test]):
        rows = train[labels[train] == label]
        best[label] = int(((pool.y[rows].sum(axis=0) + 30 * prior) / (len(rows) + 30)).argmax())
    return np.array([best[label] for label in labels[test]])


def run_pool(key: str, cache: Path) -> None:
    pool = bench.LOADERS[key]()
    lexical = lexical_matrix(pool.prompts)
    held = np.array([fold_of(p) == 0 for p in pool.prompts])
    splits = [("heldout", np.flatnonzero(~held), np.flatnonzero(held))]
    splits += [(f"lobo-{b}", np.flatnonzero(pool.bench != b), np.flatnonzero(pool.bench == b))
               for b in dict.fromkeys(pool.bench)]
    print(f"\n{pool.name}: {len(pool.prompts)} prompts. Points over the best single model in hindsight at t = 0 "
          "(by rows / by benchmark); per left-out benchmark, accuracy (share fallen back)", flush=True)
    lobo: dict[str, list[np.ndarray]] = {r: [] for r in RULES}
    order = []
    for name, train, test in splits:
        d = trained_split(pool, train, test, cache / f"{key}-{name}.npz")
        got, y = rules(pool, d, lexical), pool.y[test]
        if name == "heldout":
            print("  in distribution: " + "; ".join(
                f"{r} {bench.gains(pool.bench[test], y, got[r][0])[0]:+.2f} / "
                f"{bench.gains(pool.bench[test], y, got[r][0])[1]:+.2f}" for r in RULES), flush=True)
            if key == "mmlu_pro":
                for column in ("category", "src"):
                    picks = label_best(pool, mmlu_pro_labels(column), train, test)
                    print(f"    each {column} to its best model on the training rows: held-out accuracy "
                          f"{y[np.arange(len(y)), picks].mean():.3f} (served "
                          f"{y[np.arange(len(y)), got['served'][0]].mean():.3f})", flush=True)
            continue
        print(f"  {name.removeprefix('lobo-')} left out (best on it {y.mean(axis=0).max():.3f}): " + "; ".join(
            f"{r} {y[np.arange(len(y)), got[r][0]].mean():.3f} ({got[r][1]:.0%})" for r in RULES), flush=True)
        for r in RULES:
            lobo[r].append(got[r][0])
        order.append(test)
    rows = np.concatenate(order)
    print("  left-out benchmarks pooled, by benchmark: " + "; ".join(
        f"{r} {bench.gains(pool.bench[rows], pool.y[rows], np.concatenate(lobo[r]))[1]:+.2f}" for r in RULES),
        flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", default="routerdc5,mmlu_pro,zeroeval")
    parser.add_argument("--cache", type=Path, default=None, help="keep and reuse each split's training here")
    args = parser.parse_args()
    threadpool_limits(limits=1, user_api="blas")  # as the flow (flows/train_custom_router.py)
    cache = args.cache or Path(tempfile.mkdtemp(prefix="switchboard-unfamiliar-"))
    cache.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    for key in args.pools.split(","):
        run_pool(key, cache)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
