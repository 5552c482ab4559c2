"""The `train-default-router` flow reproduces the committed artefact from the public data and reports its metrics."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flows.train_default_router import DEFAULT_ARTEFACT, DEFAULT_DATA

pytestmark = pytest.mark.skipif(not DEFAULT_DATA.exists(), reason="needs ../shared/data/routellm")


def test_flow_reproduces_the_committed_router_and_reports_heldout_metrics(prefect_harness, tmp_path):
    from flows.train_default_router import train_default_router_flow

    artefact = tmp_path / "default_router"
    shutil.copytree(DEFAULT_ARTEFACT, artefact)
    committed = (artefact / "router.json").read_bytes()

    result = train_default_router_flow(artefact_dir=str(artefact), publish=True)

    assert result["reproduces_committed"] is True, "rerunning the flow must reproduce the committed artefact"
    assert result["published"] is False and (artefact / "router.json").read_bytes() == committed
    assert set(result["heldout"]) == {"mmlu", "gsm8k", "mt_bench"}
    for figures in result["heldout"].values():
        assert figures["random"]["apgr"] == 0.5
        assert 0.5 < figures["router"]["apgr"] < figures["oracle"]["apgr"]
    assert not any(p.name.startswith("default-router-") for p in Path(tmp_path).iterdir())
