"""Pools whose models have no figures, before and after onboarding them, at cost_quality_tradeoff 0, through the API.

    .venv/bin/python -m benchmarks.onboarding_pool [--prompts 300] [--groups zeroeval,mmlu_pro] [--opaque]

Models: every ZeroEval run with results on both CRUX and MATH level 5 (group zeroeval; ../shared/data/zeroeval, data
card there), and every MMLU-Pro run (group mmlu_pro: knowledge prompts; ../shared/data/mmlu_pro), each group dealt
into pools of about 9 by benchmarks/default_router_unseen_pools.py's fixed rule (sorted by name, pool k = every
n-th from the k-th), named as custom models (provider 'huggingface', the model as in the data) at that benchmark's
list prices (price_of). Each pool is served by an API of its own whose figures file has every row of the pool's models
removed (at the loosest level of api/routing/model_names.py, so no snapshot or sibling figure is left either; the
other pools' models keep theirs, as public models would): the router has no evidence for any pool model, as the
x-switchboard-no-evidence header confirms. Measured figures reach an axis through the lines the router fits from
other models' figures (api/routing/capability.py), and masking a pool can take those lines' anchors with it (the
shipped file's MMLU-Pro anchors are these very models): --opaque keeps every figure and sends the pool's models as
model-00, model-01, ..., which the router cannot link to any figure, so the lines keep their anchors (the pool's own
public figures among them: a milder test of the prior, a fairer one of what onboarding adds).

Prompts: the group's questions every model of the group answered, minus the calibration suite's
(datasets/calibration/), a fixed spread of --prompts of them per pool. Accuracy of a choice: the chosen model's real
0/1 result. "best" is the pool's best single model on those prompts.

Onboarding: each model is played by its real per-question outcomes (tests/support/calibrated_models.py) and asked the
calibration suite by the onboard-model flow's own code (flows/model_figures/calibration.py), within the default caps
(SWITCHBOARD_ONBOARD_MAX_CALLS, SWITCHBOARD_ONBOARD_MAX_COST_USD) and billed as the fake upstream counts tokens
(characters / 4); its figures are stored on an onboarding run of the caller's organization as the flow stores them,
and the API serves them through the change feed. The provider calls themselves (LiteLLM, HTTP) are what
tests/flows/test_onboard_model.py runs end to end.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from api.model_figures.measured import encode
from api.routing import model_names
from api.routing.default_router import DEFAULT_PRIOR_PATH
from benchmarks.default_router_unseen import sample
from benchmarks.default_router_unseen_pools import load_source, pools_of, price_of
from flows.model_figures.calibration import Refused, calibrate
from flows.model_figures.suite import load_suite
from tests.support.calibrated_models import canonical, outcomes, reply, true_accuracy

ORGANIZATION = "bench"
HEADER = "x-switchboard-no-evidence"


def masked_models(models: list[str], out: Path) -> Path:
    """The shipped figures without any row of `models` or of a snapshot or sibling of theirs."""
    keys = {model_names.key(m, model_names.VARIANT) for m in models}
    with DEFAULT_PRIOR_PATH.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = [r for r in reader if model_names.key(r["model"], model_names.VARIANT) not in keys]
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return out


GROUPS = {"zeroeval": ("crux", "math_l5"), "mmlu_pro": ("mmlu_pro",)}


def combined(sources: tuple[str, ...]) -> tuple[list[str], list[str], np.ndarray]:
    """(prompts, models, results) of the sources for the models with results on all of them, without the
    calibration suite's questions."""
    suite = {item.prompt for item in load_suite()}
    parts = [load_source(source) for source in sources]
    models = sorted(set.intersection(*(set(part[1]) for part in parts)), key=str.lower)
    prompts, rows = [], []
    for source_prompts, source_models, results in parts:
        columns = [source_models.index(m) for m in models]
        for prompt, row in zip(source_prompts, results):
            if prompt not in suite:
                prompts.append(prompt)
                rows.append(row[columns])
    return prompts, models, np.array(rows)


def route(client, headers: dict, prompts: list[str], pool: list[str], names: list[str]) -> tuple[np.ndarray, int]:
    """(index into `pool` of the model chosen for each prompt at t = 0, how many pool models the no-evidence header
    named); the pool's models are sent under `names`."""
    candidates = []
    for m, name in zip(pool, names):
        inp, out = price_of(m)
        candidates.append({"provider": "huggingface", "model": name, "is_custom": True, "context_length": 32768,
                           "input_price": inp, "output_price": out, "latency": 1.0})
    chosen, unknown = [], set()
    for prompt in prompts:
        r = client.post("/v2/modelRouter/modelSelect", headers=headers, json={
            "messages": [{"role": "user", "content": prompt}], "llm_providers": candidates,
            "cost_quality_tradeoff": 0})
        assert r.status_code == 200, r.text
        chosen.append(names.index(r.json()["providers"][0]["model"]))
        unknown.update(name for name in r.headers.get(HEADER, "").split(",") if name)
    return np.array(chosen), len(unknown)


def onboard(store, model: str, name: str) -> tuple[int, float]:
    """Measure `model`, served as `name`, as the onboard-model flow does and store its figures; (calls, USD)."""
    # lazy: the settings are read after main() pointed them at the benchmark's data dir
    from api.settings import get_settings

    settings = get_settings()
    prices = price_of(model)
    spent = [0.0]

    def ask(item) -> str:
        answer = reply(canonical(model), item)
        if answer is None:
            raise Refused("no result")
        tokens_in = sum(len(m["content"]) for m in item.messages()) // 4 + 1
        spent[0] += (tokens_in * prices[0] + (len(answer) // 4 + 1) * prices[1]) / 1e6
        return answer

    run = store.model_figures.start_onboarding(ORGANIZATION, "bench", "huggingface", name, *prices).run
    store.model_figures.begin_onboarding(run.run_id)
    result = calibrate(load_suite(), ask, prices=prices, max_tokens=1024, max_calls=settings.onboard_max_calls,
                       max_cost_usd=settings.onboard_max_cost_usd, spent=lambda: spent[0], threads=1)
    store.model_figures.finish_onboarding(run.run_id, "completed", result.calls + result.refusals, spent[0],
                                          encode(result.figures()), result.stopped)
    return result.calls + result.refusals, spent[0]


def measure_pool(k: int, pool: list[str], prompts: list[str], work: Path, opaque: bool) -> tuple[tuple, tuple, dict]:
    """((choices, no-evidence count) before, the same after, model -> (calls, USD)) of one pool, on an API whose
    figures leave the pool's models out (opaque: that keeps every figure, the pool's models named model-00, ...)."""
    work.mkdir(parents=True, exist_ok=True)
    names = [f"model-{i:02d}" for i in range(len(pool))] if opaque else list(pool)
    figures = DEFAULT_PRIOR_PATH if opaque else masked_models(pool, work / f"figures-{k}.csv")
    os.environ.update(SWITCHBOARD_DATA_DIR=str(work / f"data-{k}"), SWITCHBOARD_ONBOARD_AUTO="false",
                      SWITCHBOARD_MODEL_FIGURES=str(figures))
    # lazy: the app reads the environment set just above (docs/architecture.md, rule 7)
    from litestar.testing import TestClient

    from api.app import create_app
    from api.settings import reset_settings

    reset_settings()
    with TestClient(create_app(publish_owner=False)) as client:
        store = client.app.state.services.store
        headers = {"Authorization": f"Bearer {store.accounts.issue_key('bench', organization_id=ORGANIZATION).key}"}
        before = route(client, headers, prompts, pool, names)
        spend = {m: onboard(store, m, name) for m, name in zip(pool, names)}
        after = route(client, headers, prompts, pool, names)
    return before, after, spend


def interval_coverage() -> tuple[int, int, list[str]]:
    """(intervals holding the true accuracy, intervals, the misses) over every shared-data model and benchmark of the
    suite it has results on, the suite asked whole (no cost cap)."""
    inside, checked, misses = 0, 0, []
    for model in outcomes():
        def ask(item, model=model) -> str:
            answer = reply(model, item)
            if answer is None:
                raise Refused("no result")
            return answer

        result = calibrate(load_suite(), ask, prices=(0.0, 0.0), max_tokens=1024, max_calls=300, max_cost_usd=1.0,
                           spent=lambda: 0.0, threads=1)
        for f in result.figures():
            truth = 100 * true_accuracy(model, f.benchmark)
            checked += 1
            if f.low <= truth <= f.high:
                inside += 1
            else:
                misses.append(f"{model} {f.benchmark} {f.score:.0f} [{f.low:.1f}, {f.high:.1f}] true {truth:.1f}")
    return inside, checked, misses


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=300, help="prompts routed per pool (a fixed spread)")
    parser.add_argument("--groups", default="zeroeval,mmlu_pro", help="zeroeval (CRUX + MATH-L5), mmlu_pro")
    parser.add_argument("--opaque", action="store_true", help="keep every figure and name the pool's models "
                                                              "model-00, ... instead (the module docstring)")
    args = parser.parse_args(argv)
    inside, checked, misses = interval_coverage()
    print(f"{len(outcomes())} shared-data models: {inside} of {checked} measured 95 % intervals "
          f"({100 * inside / checked:.1f} %) hold the true accuracy on the whole file; misses: {'; '.join(misses)}")
    work = Path(tempfile.mkdtemp(prefix="onboarding-pool-"))
    for group in args.groups.split(","):
        route_group(group, args.prompts, work, args.opaque)


def route_group(group: str, limit: int, work: Path, opaque: bool) -> None:
    prompts, models, results = combined(GROUPS[group])
    started = time.monotonic()
    pools = pools_of(models)
    rows = sample(len(prompts), limit)
    measured = [measure_pool(k, pool, [prompts[i] for i in rows], work / group, opaque) for k, pool in enumerate(pools)]
    print(f"{group}{' (opaque names)' if opaque else ''}: {len(models)} models in {len(pools)} pools, {len(rows)} prompts each ({', '.join(GROUPS[group])}"
          f" outside the calibration suite), t = 0; {time.monotonic() - started:.0f} s")
    print("pool | best single model | best | before | after | models without evidence before / after | max calls | "
          "max $ | most chosen after")
    gaps_before, gaps_after = [], []
    for k, (pool, (before, after, spend)) in enumerate(zip(pools, measured)):
        quality = results[np.ix_(rows, [models.index(m) for m in pool])]
        best = int(quality.mean(axis=0).argmax())
        acc = [float(quality[np.arange(len(rows)), chosen].mean()) for chosen, _ in (before, after)]
        gaps_before.append(quality[:, best].mean() - acc[0])
        gaps_after.append(quality[:, best].mean() - acc[1])
        print(f"{k} | {pool[best]} | {quality[:, best].mean():.3f} | {acc[0]:.3f} | {acc[1]:.3f} | "
              f"{before[1]} / {after[1]} of {len(pool)} | {max(c for c, _ in spend.values())} | "
              f"{max(usd for _, usd in spend.values()):.4f} | {pool[int(np.bincount(after[0]).argmax())]} "
              f"({np.bincount(after[0]).max() / len(rows):.0%})")
    print(f"mean gap to the pool's best: before {100 * np.mean(gaps_before):.1f} points, after "
          f"{100 * np.mean(gaps_after):.1f} points; worst pool after {100 * max(gaps_after):.1f} points")


if __name__ == "__main__":
    sys.exit(main())
