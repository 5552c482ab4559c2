"""The `train-custom-router` flow under Prefect's test harness, then its router serving modelSelect over HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from litestar.testing import TestClient

from api.settings import get_settings
from storage.store import LocalStore
from tests.support.custom_training import prepare

pytestmark = pytest.mark.usefixtures("prefect_harness")
SELECT = "/v2/modelRouter/modelSelect"
MATH = "Compute 31 * 47 + 512 and then divide the result by 7. Show the arithmetic step by step."
TRIVIA = "Which bridge is famous for being historic? Answer with one short sentence about Japan."


def test_flow_publishes_a_router_that_model_select_uses(data_dir, monkeypatch):
    from api.app import create_app
    from api.settings import reset_settings
    from flows.train_custom_router import train_custom_router

    monkeypatch.delenv("SWITCHBOARD_CUSTOM_ROUTER_E5_MAX_CHARS", raising=False)  # the default budget
    reset_settings()
    params, key = prepare()
    result = train_custom_router(**params)
    assert result["router_quality_t0"] == 1.0 and result["best_single_quality"] == 0.5

    store = LocalStore(get_settings().db_path)
    state = store.routers.state(params["preference_id"])
    assert state.job.status == "completed" and state.live is not None
    metrics = json.loads(store.routers.training_metrics(params["job_id"]))
    assert [r["name"] for r in metrics["table"]][-1] == "oracle" and len(metrics["table"]) == 11 + 2 + 1
    # The floor's verdict is in the record: nested cross-validation beats the best single model, so it routes.
    assert metrics["summary"]["routes_as_best_single_model_at_t0"] is False
    assert metrics["floor"]["cv_router_quality_t0"] > metrics["floor"]["best_single_quality"]
    # So is the familiarity threshold (flows/custom_router/familiarity.py), learned or not, and why not.
    familiar = metrics["floor"]["familiarity"]
    assert metrics["summary"]["familiarity_threshold"] == familiar["threshold"]
    assert familiar.get("why_none") or "nested_left_out_kinds_quality_t0" in familiar
    store.close()
    folder = Path(state.live.artefact_path)
    assert folder.name == params["job_id"] and (folder / "router.json").exists()
    spec = json.loads((folder / "router.json").read_text())
    assert spec["xgb"]["folds"] == 5  # small uploads get 5 folds
    # e5 taught the router's own lexicon (the default budget covers this small upload); serving reads the lexicon.
    assert spec["language"] == "english" and spec["encoder"] == "lexicon"
    assert (folder / "lexicon.npy").exists() and "compute" in json.loads((folder / "lexicon_tokens.json").read_text())
    assert set(spec["stacker"]["routing_gain"]) >= {"1.00,0.00,0.00", "0.33,0.33,0.33"}
    assert len(spec["floor"]["s"]) == 2 and len(spec["floor"]["mu"]) == len(spec["floor"]["centroids"])
    assert spec["floor"]["threshold"] == familiar["threshold"] and spec["floor"]["local_prior"] in (0.0, 100.0, 30.0)
    assert len(list((folder / "xgb").glob("*.json"))) == 2 * 5 and not list(folder.parent.glob(".*partial"))

    h = {"Authorization": f"Bearer {key}"}
    pid = params["preference_id"]
    dear, cheap = {"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}
    other = {"provider": "anthropic", "model": "claude-haiku-4-5"}

    def pick(text, providers, **extra):
        r = client.post(SELECT, headers=h, json={"messages": text, "llm_providers": providers,
                                                 "preference_id": pid, **extra})
        assert r.status_code == 200, r.text
        return r.json()["providers"][0]

    with TestClient(create_app(publish_owner=False)) as client:
        # The router learned which model wins on which kind of prompt, whatever the prices say.
        assert pick(MATH, [dear, cheap]) == dear
        assert pick(TRIVIA, [dear, cheap]) == cheap
        # cost_quality_tradeoff works with custom routers: 10 is the cheapest candidate.
        assert pick(MATH, [dear, cheap], cost_quality_tradeoff=10) == cheap
        # A candidate the router does not know is scored by the default router, moved onto the custom scale.
        assert pick(MATH, [dear, other]) in (dear, other)
        assert pick(TRIVIA, [other]) == other
        log = client.app.state.services.sessions
        log.sessions.flush()
        import pyarrow.parquet as pq

        routers = [row["router"] for part in sorted((log.events_dir / "sessions").glob("day=*/*.parquet"))
                   for row in pq.read_table(part).to_pylist()]
        assert routers[0] == f"custom:{params['job_id']}"
        assert routers[3].endswith("+default") and "knows none" in routers[4]


def test_without_an_e5_budget_the_router_reads_the_static_embedding(data_dir, monkeypatch):
    from api.catalogue import load_catalogue
    from api.custom_router.model import load_custom_router
    from api.routing.features import FEATURE_VERSION
    from api.routing.router import Candidate
    from api.settings import reset_settings
    from flows.train_custom_router import train_custom_router

    monkeypatch.setenv("SWITCHBOARD_CUSTOM_ROUTER_E5_MAX_CHARS", "0")  # no teacher
    reset_settings()
    params, _ = prepare()
    train_custom_router(**params)
    store = LocalStore(get_settings().db_path)
    folder = store.routers.state(params["preference_id"]).live.artefact_path
    store.close()
    router = load_custom_router(folder)
    assert router.spec["encoder"] == "english" and router.spec["feature_version"] == FEATURE_VERSION
    catalogue = load_catalogue()
    cands = [Candidate(e.provider, e.model, e.input_price, e.output_price)
             for e in (catalogue.get("openai", "gpt-4o"), catalogue.get("openai", "gpt-4o-mini"))]
    q = router.predict_quality(None, cands, text=MATH)
    assert q[0] > q[1]


def test_mixing_keeps_known_scores_and_shifts_unknown_ones():
    from api.routing.router import Candidate
    from api.selection.custom_mix import mixed_quality

    class Fixed:
        def __init__(self, name, scores, known=None):
            self.name, self.scores, self.known_keys = name, scores, known

        def known(self, cands):
            return np.array([c.key in self.known_keys for c in cands])

        def predict_quality(self, features, cands, text=None):
            return np.array([self.scores.get(c.key, np.nan) for c in cands])

    a, b, c = (Candidate("p", m, 1.0, 1.0) for m in "abc")
    custom = Fixed("custom", {"p/a": 0.9, "p/b": 0.5}, {"p/a", "p/b"})
    default = Fixed("default", {"p/a": 0.5, "p/b": 0.5, "p/c": 0.5})
    q, used, name = mixed_quality(custom, default, None, [a, b, c], "x")
    assert q[0] == 0.9 and q[1] == 0.5 and used is custom and name == "custom+default"
    # mean logit shift over the known ones: (logit .9 + logit .5) / 2 - logit .5
    assert q[2] == pytest.approx(1 / (1 + np.exp(-np.log(9) / 2)))


def test_a_superseded_job_stops_without_publishing(data_dir):
    from flows.train_custom_router import train_custom_router

    params, _ = prepare()
    store = LocalStore(get_settings().db_path)
    store.jobs.update(params["job_id"], status="cancelled", error="superseded by training job x")
    store.close()
    state = train_custom_router(**params, return_state=True)
    assert state.is_cancelled()
    store = LocalStore(get_settings().db_path)
    assert store.routers.state(params["preference_id"]).live is None
    store.close()


def test_a_broken_dataset_fails_the_job_with_the_reason(data_dir):
    from flows.train_custom_router import train_custom_router

    params, _ = prepare()
    Path(params["dataset_path"]).unlink()
    state = train_custom_router(**params, return_state=True)
    assert state.is_failed()
    store = LocalStore(get_settings().db_path)
    job = store.jobs.get(params["job_id"])
    assert job.status == "failed" and job.error.startswith("FileNotFoundError: ")
    assert "submit the job again" in job.error
    assert "d.parquet" not in job.error and str(data_dir) not in job.error  # the path is for the run's log
    store.close()


def test_a_training_failure_reaches_model_select_without_server_paths_or_native_traces(data_dir):
    """Scores far beyond float64's comfortable range (as an upload validated before SCORE_OUT_OF_RANGE existed
    could hold) make training fail inside numpy and XGBoost; the job's error and modelSelect's 400 say what kind
    of failure it was, never the library's message, which carries its stack trace and the server's file paths."""
    import polars as pl

    from api.app import create_app
    from flows.train_custom_router import train_custom_router

    params, key = prepare()
    frame = pl.read_parquet(params["dataset_path"])
    extreme = pl.Series([1e308 if i % 2 else -1e308 for i in range(frame.height)])
    frame.with_columns(*(extreme.alias(c) for c in frame.columns if c.endswith("/score"))).write_parquet(
        params["dataset_path"])
    assert train_custom_router(**params, return_state=True).is_failed()
    store = LocalStore(get_settings().db_path)
    error = store.jobs.get(params["job_id"]).error
    store.close()
    with TestClient(create_app(publish_owner=False)) as client:
        r = client.post(SELECT, headers={"Authorization": f"Bearer {key}"},
                        json={"messages": "hi", "llm_providers": [{"provider": "openai", "model": "gpt-4o"}],
                              "preference_id": params["preference_id"]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "ROUTER_TRAINING_FAILED", r.text
    for shown in (error, r.text):
        assert "internal error" in shown and "server's log" in shown, shown
        for leak in (str(data_dir), "site-packages", ".py", ".cc", ".h:", "Stack trace", "Traceback", "\\n"):
            assert leak not in shown, (leak, shown)
