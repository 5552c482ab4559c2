"""The same upload trained twice gives the same router: the teacher is bounded by characters, never by seconds,
and nothing else in training reads the clock (issue 21). Nothing here is timed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from api.settings import get_settings
from storage.store import LocalStore
from tests.support.custom_training import prepare
from tests.support.specialists import LLM_PROVIDERS, specialist_csv, specialist_prompts

pytestmark = pytest.mark.usefixtures("prefect_harness")
RUN_SPECIFIC = {"job_id", "preference_id", "trained_at", "training_seconds", "peak_rss_mb"}


def _without_run_fields(value):
    if isinstance(value, dict):
        return {k: _without_run_fields(v) for k, v in value.items() if k not in RUN_SPECIFIC}
    if isinstance(value, list):
        return [_without_run_fields(v) for v in value]
    return value


def _flat_numbers(value) -> list[float]:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flat_numbers(value[k])]
    if isinstance(value, list):
        return [x for v in value for x in _flat_numbers(v)]
    return [float(value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def _flat_other(value):
    if isinstance(value, dict):
        return {k: _flat_other(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_flat_other(v) for v in value]
    return None if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def test_the_same_upload_trained_twice_gives_the_same_router(data_dir, monkeypatch):
    from api.custom_router.model import load_custom_router
    from api.settings import reset_settings
    from flows.custom_router import calibration
    from flows.train_custom_router import train_custom_router

    monkeypatch.setenv("SWITCHBOARD_CUSTOM_ROUTER_E5_MAX_CHARS", "12000")  # a teacher on part of the upload
    reset_settings()
    data = specialist_csv(n=300)
    folders, reports = [], []
    for _ in range(2):
        params, _ = prepare(language="multilingual", data=data, providers=LLM_PROVIDERS)
        train_custom_router(**params)
        store = LocalStore(get_settings().db_path)
        folders.append(Path(store.routers.state(params["preference_id"]).live.artefact_path))
        reports.append(json.loads(store.routers.training_metrics(params["job_id"])))
        store.close()

    # Metrics equal: the same keys, texts and flags, and the same numbers (a tolerance for reading, not for CPUs).
    first, second = (_without_run_fields(r) for r in reports)
    assert _flat_other(first) == _flat_other(second)
    assert _flat_numbers(first) == pytest.approx(_flat_numbers(second))
    specs = [_without_run_fields(json.loads((f / "router.json").read_text())) for f in folders]
    assert _flat_other(specs[0]) == _flat_other(specs[1])
    assert _flat_numbers(specs[0]) == pytest.approx(_flat_numbers(specs[1]))

    # The floor's verdict is published as a table artifact too (what the Prefect UI shows).
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        key = ArtifactFilterKey(any_=["custom-router-floor"])
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=key))
    assert len(found) >= 2 and all("best single model" in str(a.data) for a in found)

    # Decisions equal on a probe set of prompts neither training saw, at every setting of the dial.
    routers = [load_custom_router(f) for f in folders]
    assert all(r.spec["encoder"] == "lexicon" for r in routers)
    probe = [text for _, text in specialist_prompts(40, seed=11)]
    cost = calibration.request_costs(np.array([len(p) for p in probe]),
                                     np.array([m["input_price"] for m in routers[0].spec["models"]], float),
                                     np.array([m["output_price"] for m in routers[0].spec["models"]], float))
    picks = []
    for router in routers:
        q = np.array([router.quality_of_all(router.encoder.vector(text)) for text in probe])
        picks.append([calibration.choices(q, cost, lam).tolist() for lam in router.schedule])
    assert picks[0] == picks[1]
    assert len({tuple(p) for p in picks[0]}) > 1  # the dial changes decisions: the probe is not trivial
