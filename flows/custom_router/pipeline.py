"""The training steps of a custom router, without Prefect: one step sequence for the flow and the benchmarks.

flows/train_custom_router.py runs each step as a Prefect task named after it (so a run reads step by step in the
UI, and the flow checks between steps that its job is still open); benchmarks/custom_router_pools.py runs them as
plain calls (`direct`). Steps: distil-lexicon -> embed-prompts -> fit-linear-heads -> fit-xgboost -> fit-knn ->
calibrate (stacker, floor, familiarity threshold, schedule). What each fits: flows/custom_router/training.py,
floor.py, familiarity.py, calibration.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from api.custom_router.encoders import ENGLISH, LEXICON, EnglishEncoder, LexiconEncoder
from api.custom_router.floor import Floor
from api.custom_router.lexicon import Lexicon
from api.custom_router.model import FORMAT
from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import Featurizer
from flows.custom_router import calibration, familiarity, floor, teacher, training
from flows.custom_router.neighbours import NeighbourTable

RunStep = Callable[..., Any]  # run_step(name, fn, *args) -> fn(*args)


def direct(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


@dataclass(frozen=True)
class Trained:
    lexicon: Lexicon | None
    encoder: EnglishEncoder | LexiconEncoder
    cfg: training.TrainConfig
    emb: np.ndarray  # (n, e) the kNN features (the encoder's knn_columns)
    linear: np.ndarray  # the linear heads' weights fitted on all rows
    bases: dict[str, np.ndarray]  # out-of-fold predictions of each base predictor
    cost: np.ndarray  # (n, M) estimated USD per request
    stacker: dict
    stacked: np.ndarray  # (n, M) the stacker's out-of-fold calibrated predictions
    floor: Floor
    predicted: np.ndarray  # (n, M) the floor's nested cross-validated predictions (what evaluation reports)
    schedule: list[float]
    floor_report: dict


def make_encoder(lexicon: Lexicon | None) -> EnglishEncoder | LexiconEncoder:
    featurizer = Featurizer.load(DEFAULT_ARTEFACT_DIR)
    return EnglishEncoder(featurizer) if lexicon is None else LexiconEncoder(featurizer, lexicon)


def distil(prompts: list[str], budget_chars: int, log: Callable[[str], None]) -> teacher.Distilled | None:
    started = time.perf_counter()
    distilled = teacher.distil_lexicon(prompts, budget_chars, log=log)
    if distilled is None:
        log(f"no e5 teacher (budget {budget_chars} characters): the router reads the static embedding alone")
    else:
        log(f"lexicon of {len(distilled.lexicon.tokens):,} tokens x {distilled.lexicon.dim} distilled from e5 on "
            f"{len(distilled.rows)} prompts in {time.perf_counter() - started:.1f} s")
    return distilled


def embed(prompts: list[str], encoder: EnglishEncoder | LexiconEncoder, distilled: teacher.Distilled | None,
          log: Callable[[str], None], batch: int = 1000) -> np.ndarray:
    started, parts = time.perf_counter(), []
    for i in range(0, len(prompts), batch):
        parts.append(encoder.vectors(prompts[i:i + batch]))
        log(f"embedded {min(i + batch, len(prompts))}/{len(prompts)} prompts ({encoder.version})")
    x = np.concatenate(parts).astype(np.float32)
    if distilled is not None:  # the teacher's prompts as serving will see prompts: cross-fitted
        x[distilled.rows] = encoder.with_lexicon_vectors(x[distilled.rows], distilled.held_out)
    log(f"embedding took {time.perf_counter() - started:.1f} s")
    return x


def calibrate(bases: list[np.ndarray], y: np.ndarray, cost: np.ndarray, emb: np.ndarray, folds: np.ndarray,
              log: Callable[[str], None]) -> tuple[dict, np.ndarray, Floor, np.ndarray, list[float], dict]:
    """Stacker, then the floor and its familiarity threshold, then the schedule on the floor's predictions.
    Returns (stacker spec, stacked out-of-fold predictions, the floor served, its nested cross-validated
    predictions, schedule, floor report)."""
    stacker, stacked = training.fit_stacker(bases, y)
    log(f"blend (linear, xgboost, knn) = {stacker['blend']}; out-of-fold routing gain by blend: "
        f"{stacker['routing_gain']}")
    table = NeighbourTable(emb, y, folds)
    chosen, floor_report, nested = floor.fit_floor(stacked, y, emb, folds, log=log, table=table)
    chosen, floor_report["familiarity"], nested = familiarity.learn_threshold(chosen, floor_report, stacked, y, emb,
                                                                             nested, table, log=log)
    schedule = calibration.calibrate_schedule(chosen.predict(stacked, emb, table.own_fold_out()), cost)
    log(f"trade-off schedule (t = 0..9): {schedule}")
    return stacker, stacked, chosen, nested, schedule, floor_report


def request_costs(prompts: list[str], models: list[dict]) -> np.ndarray:
    return calibration.request_costs(np.array([len(p) for p in prompts]),
                                     np.array([m["input_price"] for m in models], float),
                                     np.array([m["output_price"] for m in models], float))


def fit(prompts: list[str], y: np.ndarray, models: list[dict], folder: Path, teacher_chars: int,
        run_step: RunStep = direct, log: Callable[[str], None] = print) -> Trained:
    """Every training step on (prompts, y), the XGBoost models written under folder/xgb."""
    distilled = run_step("distil-lexicon", distil, prompts, teacher_chars, log)
    lexicon = distilled.lexicon if distilled else None
    encoder = make_encoder(lexicon)
    x = run_step("embed-prompts", embed, prompts, encoder, distilled, log)
    emb = x[:, encoder.knn_columns]
    cfg = replace(training.config_for(len(prompts)), l2_c=encoder.linear_c)
    folds = training.fold_ids(prompts, cfg.folds)
    lin_oof, linear = run_step("fit-linear-heads", training.linear_oof, x, y, folds, cfg)
    xgb_oof = run_step("fit-xgboost", training.xgb_oof, x, y, folds, cfg, Path(folder) / "xgb", log)
    knn = run_step("fit-knn", training.knn_oof, emb, y, folds, cfg)
    cost = request_costs(prompts, models)
    stacker, stacked, chosen, nested, schedule, floor_report = run_step(
        "calibrate", calibrate, [lin_oof, xgb_oof, knn], y, cost, emb, folds, log)
    return Trained(lexicon, encoder, cfg, emb, linear, {"linear": lin_oof, "xgboost": xgb_oof, "knn": knn}, cost,
                   stacker, stacked, chosen, nested, schedule, floor_report)


def router_spec(trained: Trained, models: list[dict], **fields: Any) -> dict:
    """router.json (api/custom_router/model.py reads it); `fields`: job_id, preference_id, language and the
    run's own entries."""
    cfg = trained.cfg
    return {"format": FORMAT, **fields, "encoder": ENGLISH if trained.lexicon is None else LEXICON,
            "feature_version": trained.encoder.version, "models": models, "schedule": trained.schedule,
            "stacker": trained.stacker, "floor": trained.floor.spec(),
            "knn": {"k": cfg.knn_k, "temperature": cfg.knn_temperature},
            "xgb": {"folds": cfg.folds, "rounds": cfg.xgb_rounds, "depth": cfg.xgb_depth, "eta": cfg.xgb_eta}}


def write_artefact(folder: Path, spec: dict, trained: Trained, y: np.ndarray) -> None:
    """The artefact folder's files besides xgb/ (written by fit-xgboost) and evaluation.json (the flow's)."""
    if trained.lexicon is not None:
        trained.lexicon.save(folder)
    np.save(folder / "linear.npy", trained.linear.astype(np.float32))
    np.save(folder / "knn_embeddings.npy", trained.emb.astype(np.float16))
    np.save(folder / "knn_targets.npy", y.astype(np.float32))
    (folder / "router.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
