"""Routers trained by the previous version keep serving. One trained on e5 vectors is served through a lexicon fitted
to its stored e5 vectors (api/custom_router/legacy.py), with no e5 call when routing; an English static one loads
as it is (its layout is the one a run without an e5 budget still writes:
tests/flows/test_train_custom_router.py::test_without_an_e5_budget_the_router_reads_the_static_embedding)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from api.custom_router.encoders import E5_VERSION, MigratedE5Encoder
from api.custom_router.model import FORMAT
from api.custom_router.registry import CustomRouterRegistry
from api.routing.features import hand_features
from api.routing.router import Candidate
from api.settings import get_settings
from flows.custom_router import training
from flows.custom_router.teacher import E5Model
from storage.store import LocalStore
from tests.support.custom_training import prepare
from tests.support.synthetic import MATH, TRIVIA, prompts


def write_e5_router(folder: Path, params: dict, texts: list[str], y: np.ndarray) -> np.ndarray:
    """An artefact laid out as the previous version wrote it for `language=multilingual`: heads on [e5 | hand],
    e5's vector of every training prompt kept for the kNN head. Returns those e5 vectors."""
    e5 = E5Model().embed(texts)
    x = np.hstack([e5, np.stack([hand_features(t) for t in texts])]).astype(np.float32)
    cfg = training.TrainConfig(folds=2, l2_c=1.0, xgb_rounds=5)
    folds = training.fold_ids(texts, cfg.folds)
    lin_oof, linear = training.linear_oof(x, y, folds, cfg)
    xgb_oof = training.xgb_oof(x, y, folds, cfg, folder / "xgb", log=lambda *_: None)
    stacker, _ = training.fit_stacker([lin_oof, xgb_oof, training.knn_oof(e5, y, folds, cfg)], y)
    np.save(folder / "linear.npy", linear.astype(np.float32))
    np.save(folder / "knn_embeddings.npy", e5.astype(np.float16))
    np.save(folder / "knn_targets.npy", y.astype(np.float32))
    spec = {"format": FORMAT, "job_id": params["job_id"], "preference_id": params["preference_id"],
            "language": "multilingual", "encoder": "multilingual", "feature_version": E5_VERSION,
            "models": params["models"], "schedule": [0.0] * 10, "stacker": stacker,
            "knn": {"k": cfg.knn_k, "temperature": cfg.knn_temperature}, "xgb": {"folds": cfg.folds}}
    (folder / "router.json").write_text(json.dumps(spec))
    return e5


def test_a_router_trained_on_e5_is_migrated_to_a_lexicon_and_still_routes(data_dir):
    params, _ = prepare()
    texts = [text for _, text in prompts(60)]
    y = np.array([[1.0, 0.0] if text.startswith("Compute") else [0.0, 1.0] for text in texts])
    folder = get_settings().artefacts_dir / "custom_routers" / params["preference_id"] / params["job_id"]
    folder.mkdir(parents=True)
    e5 = write_e5_router(folder, params, texts, y)
    store = LocalStore(get_settings().db_path)
    try:
        store.routers.publish(params["job_id"], str(folder), "{}")
        registry = CustomRouterRegistry(store).load_all()
        entry = registry.entry(params["preference_id"])
        assert entry.load_error is None
        router = entry.router
    finally:
        store.close()
    assert isinstance(router.encoder, MigratedE5Encoder)
    approx = router.encoder.lexicon.encode_batch(texts)
    assert float(np.mean(np.sum(approx * e5.astype(np.float32), axis=1))) > 0.9  # cosine to e5's own vectors
    strong, cheap = (Candidate("openai", m, 1.0, 1.0) for m in ("gpt-4o", "gpt-4o-mini"))
    math_q = router.predict_quality(None, [strong, cheap], text=MATH.format(a=12, b=34, c=56, d=7))
    trivia_q = router.predict_quality(None, [strong, cheap], text=TRIVIA.format(thing="lake", adj="deep",
                                                                                  place="Chile"))
    assert math_q[0] > math_q[1] and trivia_q[1] > trivia_q[0]
