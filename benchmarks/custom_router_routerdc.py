"""RouterDC's 7 open models through the HTTP API: do specialists get their queries?

    .venv/bin/python -m benchmarks.custom_router_routerdc [--skip-ood]

Data: ../shared/data/routerdc (README there): the training files of the RouterDC paper (arXiv 2409.19886), 7 open
7-8B models with per-query scores on MMLU, GSM8K, CMMLU (Chinese), ARC-Challenge and HumanEval. Only the training
files are here, so the splits are made here, not the paper's:
- in distribution: a prompt is held out when sha256(prompt) % 5 == 0 (flows.default_router.data.fold_of, the
  routers' split) in each of the five sets; the rest of all five is uploaded as one table, `language=multilingual`;
- out of distribution: leave one benchmark out: the four other sets are uploaded, every prompt of the fifth is
  routed; once per set (five routers).
Prices are equal (the models are all 7-8B), so every prompt is routed at cost_quality_tradeoff 0 (pure quality).
Figures follow the paper: accuracy averaged over tasks, against the single model whose task average is best on the
same prompts (known only with hindsight); the out-of-distribution table also shows the model best on the uploaded
sets, the one a team would deploy without a router. Nothing trained here is kept (CMMLU is CC BY-NC-SA).
"""

from __future__ import annotations

import argparse
import json
import time

import httpx
import numpy as np

from benchmarks.custom_router_common import SHARED, csv_of, route, serve, training_metrics, upload, wait_ready
from flows.default_router.data import fold_of

FILES = {"MMLU": "mmlu_train.json", "GSM8K": "gsm8k-train.json", "CMMLU": "cmmlu_train.json",
         "ARC-C": "arc_challenge_train.json", "HumanEval": "humaneval_train.json"}
# RouterDC's own gains over the best single model (paper, Table 1: in distribution / out of distribution).
PAPER_GAIN = {"in distribution": 2.76, "out of distribution": 1.90}


def load() -> tuple[list[str], np.ndarray, np.ndarray, list[str]]:
    """(prompts, task of each, scores (n, 7), model names)."""
    prompts, tasks, scores, models = [], [], [], None
    for task, name in FILES.items():
        for row in json.loads((SHARED / "routerdc" / name).read_text(encoding="utf-8")):
            models = models or list(row["scores"])
            prompts.append(row["question"])
            tasks.append(task)
            scores.append([float(row["scores"][m]) for m in models])
    return prompts, np.array(tasks), np.array(scores), models


def providers(models: list[str]) -> list[dict]:
    return [{"provider": "routerdc", "model": m.replace("/", "--"), "is_custom": True, "input_price": 0.2,
             "output_price": 0.2, "context_length": 8192, "latency": 1.0} for m in models]


def train_and_route(client: httpx.Client, svc, prompts: list[str], scores: np.ndarray, provs: list[dict],
                    train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, float, dict]:
    """Upload the train rows, route the test rows at t = 0: (picked model per test row, upload -> live seconds,
    the flow's out-of-fold summary)."""
    keys = [f"{p['provider']}/{p['model']}" for p in provs]
    data = csv_of([prompts[i] for i in train], keys, scores[train].tolist())
    started = time.perf_counter()
    pid, _ = upload(svc, data, provs, language="multilingual")
    wait_ready(client, svc, pid, provs)
    live = time.perf_counter() - started
    picks = np.array([keys.index(route(client, svc, pid, prompts[i], provs, 0)) for i in test])
    return picks, live, training_metrics(svc, pid).get("summary", {})


def table(title: str, tasks: np.ndarray, scores: np.ndarray, picks: np.ndarray, models: list[str],
          deployed: dict[str, int] | None = None) -> float:
    """Print per-task accuracy of the router and of every model; returns the router's gain in points over the
    best single model by task average."""
    names = list(FILES)
    per_model = np.array([[scores[tasks == t, m].mean() for m in range(len(models))] for t in names])
    router = np.array([scores[np.flatnonzero(tasks == t), picks[tasks == t]].mean() for t in names])
    best = int(per_model.mean(axis=0).argmax())
    short = [m.split("/")[1][:22] for m in models]
    print(f"\n{title}  ({', '.join(f'{t} {int((tasks == t).sum())}' for t in names)} prompts)")
    print(f"{'':26}" + "".join(f"{t:>10}" for t in names) + f"{'average':>10}")
    for m in np.argsort(-per_model.mean(axis=0)):
        mark = " <- best single" if m == best else ""
        print(f"{short[m]:26}" + "".join(f"{v:10.3f}" for v in per_model[:, m]) + f"{per_model[:, m].mean():10.3f}"
              + mark)
    print(f"{'router':26}" + "".join(f"{v:10.3f}" for v in router) + f"{router.mean():10.3f}")
    if deployed is not None:  # the model best on each upload, deployed on the held-out set
        dep = np.array([per_model[i, deployed[t]] for i, t in enumerate(names)])
        print(f"{'best model of the upload':26}" + "".join(f"{v:10.3f}" for v in dep) + f"{dep.mean():10.3f}")
    gain = 100 * (router.mean() - per_model[:, best].mean())
    lost = [t for i, t in enumerate(names) if router[i] < per_model[i].max() - 1e-9]
    print(f"router - best single model: {gain:+.2f} points (RouterDC paper: {PAPER_GAIN[title]:+.2f}); "
          f"below the task's best single model on {len(lost)} of {len(names)}: {', '.join(lost) or 'none'}")
    for t in names:
        used = np.bincount(picks[tasks == t], minlength=len(models)) / (tasks == t).sum()
        print(f"  {t:10} picks: " + ", ".join(f"{short[m]} {used[m]:.0%}" for m in np.argsort(-used)[:3] if used[m]))
    return gain


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-ood", action="store_true", help="only the in-distribution split (one upload)")
    args = parser.parse_args()
    prompts, tasks, scores, models = load()
    provs = providers(models)
    fold = np.array([fold_of(p) for p in prompts])
    svc = serve()
    try:
        with httpx.Client(timeout=60) as client:
            train, test = np.flatnonzero(fold != 0), np.flatnonzero(fold == 0)
            picks, live, summary = train_and_route(client, svc, prompts, scores, provs, train, test)
            print(f"in distribution: uploaded {len(train):,} rows (all five sets, language=multilingual), live "
                  f"after {live:.1f} s; {len(test):,} held-out prompts routed through modelSelect")
            print(f"(training-time out-of-fold evaluation: {summary})")
            table("in distribution", tasks[test], scores[test], picks, models)
            if args.skip_ood:
                return 0
            ood = np.zeros(len(prompts), dtype=int)
            deployed, lives = {}, []
            for t in FILES:
                train, test = np.flatnonzero(tasks != t), np.flatnonzero(tasks == t)
                ood[test], live, _ = train_and_route(client, svc, prompts, scores, provs, train, test)
                deployed[t] = int(scores[train].mean(axis=0).argmax())
                lives.append(f"{t} {live:.1f} s")
            print(f"\nout of distribution: five uploads of four sets each, live after {', '.join(lives)}")
            table("out of distribution", tasks, scores, ood, models, deployed)
    finally:
        svc.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
