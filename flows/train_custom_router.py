"""`train-custom-router`: from a validated upload (Parquet) to a live custom router for one preference.

Each step is a task with a kebab-case name, so a data scientist can follow a run in the Prefect UI:
load-dataset -> distil-lexicon (e5 as a teacher on a sample, api/custom_router/lexicon.py) -> embed-prompts ->
fit-linear-heads / fit-xgboost / fit-knn (K-fold cross-validation) ->
calibrate (stacker, the floor of flows/custom_router/floor.py, its familiarity threshold of
flows/custom_router/familiarity.py, trade-off schedule) -> evaluate-held-out-folds (Prefect table artifacts: router
at every setting vs each single model vs the oracle; the floor's nested cross-validated accuracy at t=0 vs the best
single model, whether the router routes as that model, and the familiarity threshold with the accuracy on the
upload's kinds of prompt left out in turn) ->
publish-router (versioned artefact folder, made live in storage, metrics recorded for notebooks) -> record-run.

The job follows JobStatus: the API creates it (`created`), queues the flow (`queued`), the flow moves it to
`processing`, and publishing completes it. A run whose job was cancelled meanwhile (a newer upload for the same
preference, or the preference was deleted) stops at the next step and never publishes. Any error marks the job
`failed` with the reason modelSelect will show.
"""

from __future__ import annotations

import os

# XGBoost's OpenMP threads spin while they wait for work by default; when the two cores are shared with the API,
# the Prefect server and other runs, spinning threads starve each other (a fold measured 60 s instead of 6 s).
# Must be set before xgboost loads the OpenMP runtime.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import json  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from prefect import flow, get_run_logger, task  # noqa: E402
from prefect.artifacts import create_markdown_artifact, create_table_artifact  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.states import Cancelled  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from api.public_errors import public_reason  # noqa: E402
from api.settings import get_settings  # noqa: E402
from flows.custom_router import calibration, pipeline, training  # noqa: E402
from flows.run_metrics import FINAL_STATE_HOOKS  # noqa: E402
from flows.storage_access import connect  # noqa: E402


class Superseded(Exception):
    """The job is no longer open: stop without publishing."""


def _check_open(store, job_id: str) -> None:
    if not store.jobs.is_open(job_id):
        raise Superseded(f"job {job_id} is no longer open (superseded by a newer upload, or the preference was "
                         "deleted)")


@task(name="load-dataset", cache_policy=NO_CACHE)
def load_dataset(dataset_path: str, models: list[dict], maximize: bool) -> tuple[list[str], np.ndarray, dict]:
    # lazy: polars loads in the flow run, not in the flow runner that imports every flow
    import polars as pl

    frame = pl.read_parquet(dataset_path)
    scores = np.column_stack([frame[f"{m['column_prefix']}/score"].to_numpy().astype(np.float64) for m in models])
    quality, scale = training.normalise_scores(scores, maximize)
    get_run_logger().info("%d prompts x %d models; scores %s", frame.height, len(models), scale)
    return frame["prompt"].to_list(), quality, scale


@task(name="evaluate-held-out-folds", cache_policy=NO_CACHE)
def evaluate(predicted: np.ndarray, y: np.ndarray, cost: np.ndarray, schedule: list, models: list[str],
             bases: dict[str, np.ndarray], floor_report: dict) -> dict:
    report = calibration.evaluate(predicted, y, cost, schedule, models)
    report["floor"] = floor_report
    report["summary"].update({k: floor_report[k] for k in (
        "cv_router_quality_t0", "cv_gain_points", "routes_as_best_single_model_at_t0", "clusters")})
    familiar = floor_report["familiarity"]  # flows/custom_router/familiarity.py: recorded with the router
    report["summary"]["familiarity_threshold"] = familiar["threshold"]
    # How well each base predictor alone ranks the models (mean observed quality of its top pick).
    n = len(y)
    report["base_predictors_t0_quality"] = {name: float(y[np.arange(n), p.argmax(axis=1)].mean())
                                            for name, p in bases.items()}
    table = [{"": r["name"], "quality": round(r["quality"], 4), "USD per 1k requests": round(r["cost_per_1k"], 4),
              "calls": ", ".join(f"{k} {v:.0%}" for k, v in list(r["shares"].items())[:4])} for r in report["table"]]
    create_table_artifact(table=table, key="custom-router-evaluation",
                          description="Out-of-fold evaluation: router at cost_quality_tradeoff 0..10 vs each "
                                      "single model vs the oracle (quality on the 0..1 score scale)")
    verdict = ("routes as the best single model at t=0: its cross-validated accuracy does not beat it"
               if floor_report["routes_as_best_single_model_at_t0"] else "routes by prompt at t=0")
    create_table_artifact(key="custom-router-floor", table=[
        {"": "router at t=0 (learned; nested cross-validation)", "accuracy": floor_report["cv_router_quality_t0"]},
        {"": f"best single model ({report['summary']['best_single_model']})",
         "accuracy": floor_report["best_single_quality"]},
        {"": "best single model chosen on the other folds (nested)",
         "accuracy": floor_report["cv_best_single_quality"]},
        {"": f"served: {verdict}; {floor_report['clusters']} prompt cluster(s), shrinkage per model "
             f"{floor_report['shrinkage']}", "accuracy": round(report["summary"]["router_quality_t0"], 4)},
        *familiarity_rows(familiar)],
        description="The floor: the router's cross-validated accuracy at cost_quality_tradeoff 0 against the best "
                    "single model of the upload (quality on the 0..1 score scale)")
    get_run_logger().info("evaluation: %s", report["summary"])
    return report


def familiarity_rows(familiar: dict) -> list[dict]:
    """The floor artifact's rows on the familiarity threshold: what a prompt unlike the upload gets, and why."""
    if "why_none" in familiar:
        return [{"": f"familiarity threshold: none ({familiar['why_none']})", "accuracy": None}]
    threshold = ("none: no threshold paid, on the kinds left out and in distribution together"
                 if familiar["threshold"] is None else
                 f"{familiar['threshold']:.4f} (falls back on {familiar['threshold_quantile']:.1%} of the upload's "
                 "own rows)")
    return [
        {"": f"familiarity threshold {threshold}; the upload's {familiar['kinds']} kinds of prompt left out in "
             "turn, router at t=0 (threshold chosen on the other kinds)",
         "accuracy": familiar["nested_left_out_kinds_quality_t0"]},
        {"": "the same kinds left out, without the fallback",
         "accuracy": familiar["nested_left_out_kinds_without_fallback"]},
        {"": "the same kinds left out, the other kinds' best single model",
         "accuracy": familiar["left_out_kinds_best_single_quality"]}]


@task(name="publish-router", retries=2, retry_delay_seconds=3, cache_policy=NO_CACHE)
def publish(job_id: str, staging: str, final: str, spec: dict, trained: pipeline.Trained, y: np.ndarray,
            report: dict) -> str | None:
    stage, target = Path(staging), Path(final)
    pipeline.write_artefact(stage, spec, trained, y)
    (stage / "evaluation.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    if not target.exists():
        stage.rename(target)  # the folder appears complete or not at all; it is never changed afterwards
    record = connect().routers.publish(job_id, str(target), json.dumps(report))
    return None if record is None else record.router_id


@task(name="record-run", cache_policy=NO_CACHE)
def record_run(preference_id: str, router_id: str | None, report: dict, seconds: float) -> None:
    s = report["summary"]
    create_markdown_artifact(key="custom-router-run", markdown=(
        f"Preference `{preference_id}`: router `{router_id}` live after {seconds:.1f} s of training.\n\n"
        f"Out-of-fold quality at t=0: **{s['router_quality_t0']:.4f}** vs best single model "
        f"`{s['best_single_model']}` {s['best_single_quality']:.4f} and oracle {s['oracle_quality']:.4f}.\n\n"
        + ("**It routes as the best single model at t=0**: its learned routing scored "
           f"{s['cv_router_quality_t0']:.4f} in nested cross-validation, which does not beat it."
           if s["routes_as_best_single_model_at_t0"] else
           f"Learned routing: {s['cv_router_quality_t0']:.4f} in nested cross-validation "
           f"({s['cv_gain_points']:+.2f} points over the best single model).")))


@flow(name="train-custom-router", **FINAL_STATE_HOOKS,
      flow_run_name="train-custom-router {job_id} (preference {preference_id})",
      log_prints=True)
def train_custom_router(job_id: str, preference_id: str, dataset_path: str, language: str, maximize: bool,
                        models: list[dict[str, Any]]) -> dict:
    started = time.perf_counter()
    # One BLAS thread: the products here are small, and OpenBLAS's second thread spins waiting for a core that the
    # API, Prefect or XGBoost holds (the linear heads of a 4,761-row upload: 14-16 s with two threads on a busy
    # 2-core machine, 1.4-2.6 s with one).
    threadpool_limits(limits=1, user_api="blas")
    logger = get_run_logger()
    store = connect()
    root = get_settings().artefacts_dir / "custom_routers" / preference_id
    staging = root / f".{job_id}.partial"
    try:
        _check_open(store, job_id)
        store.jobs.update(job_id, status="processing", only_if_open=True)
        prompts, y, scale = load_dataset(dataset_path, models, maximize)
        logger.info("%s prompts of %s characters in all (language %s)", f"{len(prompts):,}",
                    f"{sum(len(p) for p in prompts):,}", language)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)

        def run_step(name, fn, *args):  # each step a Prefect task of its own name, after checking the job
            _check_open(store, job_id)
            return task(name=name, cache_policy=NO_CACHE)(fn)(*args)

        trained = pipeline.fit(prompts, y, models, staging, get_settings().custom_router_e5_max_chars,
                               run_step=run_step, log=logger.info)
        _check_open(store, job_id)
        report = evaluate(trained.predicted, y, trained.cost, trained.schedule, [m["key"] for m in models],
                          trained.bases, trained.floor_report)
        report["scale"] = scale
        spec = pipeline.router_spec(trained, models, job_id=job_id, preference_id=preference_id, language=language,
                                    score_scale=scale, rows=len(prompts),
                                    trained_at=datetime.now(timezone.utc).isoformat(), summary=report["summary"])
        _check_open(store, job_id)
        report["peak_rss_mb"] = _peak_rss_mb()
        report["training_seconds"] = round(time.perf_counter() - started, 2)
        router_id = publish(job_id, str(staging), str(root / job_id), spec, trained, y, report)
        if router_id is None:
            raise Superseded(f"job {job_id} was superseded while publishing")
        record_run(preference_id, router_id, report, time.perf_counter() - started)
        logger.info("router %s live for preference %s after %.1f s (peak memory %.0f MB)", router_id,
                    preference_id, time.perf_counter() - started, report["peak_rss_mb"])
        return {"router_id": router_id, "seconds": time.perf_counter() - started, **report["summary"]}
    except Superseded as exc:
        shutil.rmtree(staging, ignore_errors=True)
        logger.info("%s", exc)
        return Cancelled(message=str(exc))  # type: ignore[return-value]
    except Exception as exc:
        shutil.rmtree(staging, ignore_errors=True)
        reason = public_reason(exc, "training the custom router", logger)  # the detail goes to the run's log
        store.jobs.update(job_id, status="failed", only_if_open=True, error=reason[:1000])
        raise


def _peak_rss_mb() -> float:
    """Peak resident memory of this flow run's process (the runner runs each flow in its own subprocess)."""

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
