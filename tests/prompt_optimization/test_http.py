"""POST /v2/prompt/optimize and the read endpoints over HTTP: validation (every refusal), the one-run rule, the
queue position, ownership, the older /adapt names, and results/costs read back from what the flow stores."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from api.settings import get_settings
from flows.prompt_opt.usage import Ledger
from storage import events
from storage.optimization_records import ModelResult
from tests.support.fakes.launcher import FakeLauncher
from tests.support.fakes.openai_server import capital_goldens
from tests.support.optimization import OPTIMIZE, body

pytestmark = pytest.mark.usefixtures("providers_reachable", "launcher")


def error(r, status: int, code: str) -> dict:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code, err
    return err


def test_start_queues_the_flow_and_reports_queued(client, launcher, optimizer_headers):
    h = optimizer_headers()
    r = client.post(OPTIMIZE, headers=h, json=body())
    assert r.status_code == 200, r.text
    run_id = r.json()["optimization_run_id"]
    assert launcher.triggered == [("optimize-prompt/optimize-prompt", {"run_id": run_id})]
    status = client.get(f"/v2/prompt/optimizeStatus/{run_id}", headers=h).json()
    assert status == {"optimization_run_id": run_id, "status": "queued", "queue_position": 1}
    results = client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()
    assert results["job_status"] == "queued" and results["prototype_mode"] is False
    assert results["evaluation_metric"] == "LLMaaJ:Sem_Sim_1" and results["origin_model"] is None
    [target] = results["target_models"]
    assert target["model_name"] == "openai/gpt-4o-mini" and target["result_status"] == "queued"
    assert target["system_prompt"] is None and target["user_message_template_fields"] == ["question"]
    costs = client.get(f"/v2/prompt/optimize/{run_id}/costs", headers=h).json()
    assert costs == {"optimization_run_id": run_id, "total_cost": 0, "usage_records": []}


class StartsBetweenReads:
    """The runs repository, except that the flow run starts (queued -> processing) just before the queue position
    is read: the status endpoint reads the run and its position separately (two RPC calls behind a store owner)."""

    def __init__(self, runs) -> None:
        self.runs = runs

    def queue_position(self, run_id: str):
        self.runs.begin(run_id)
        return self.runs.queue_position(run_id)

    def __getattr__(self, name: str):
        return getattr(self.runs, name)


def test_status_never_says_queued_without_a_position(client, launcher, optimizer_headers):
    h = optimizer_headers()
    run_id = client.post(OPTIMIZE, headers=h, json=body()).json()["optimization_run_id"]
    service = client.app.state.services.prompt_optimization
    service.store.optimizations = StartsBetweenReads(service.store.optimizations)
    status = client.get(f"/v2/prompt/optimizeStatus/{run_id}", headers=h).json()
    assert status == {"optimization_run_id": run_id, "status": "processing"}  # no position: it is not waiting


def test_one_run_per_user_and_queue_positions(client, optimizer_headers):
    bob, carol = optimizer_headers("bob"), optimizer_headers("carol")
    first = client.post(OPTIMIZE, headers=bob, json=body()).json()["optimization_run_id"]
    err = error(client.post(OPTIMIZE, headers=bob, json=body()), 429, "CONCURRENT_RUN_LIMIT")
    assert err["type"] == "rate_limit_error" and first in err["message"]
    assert err["details"] == {"running_run_id": first}
    second = client.post(OPTIMIZE, headers=carol, json=body()).json()["optimization_run_id"]
    assert client.get(f"/v2/prompt/optimizeStatus/{second}", headers=carol).json()["queue_position"] == 2
    store = client.app.state.services.store
    assert store.optimizations.begin(first)  # bob's run starts: carol's is next
    assert client.get(f"/v2/prompt/optimizeStatus/{first}", headers=bob).json() == {
        "optimization_run_id": first, "status": "processing"}
    assert client.get(f"/v2/prompt/optimizeStatus/{second}", headers=carol).json()["queue_position"] == 1
    store.optimizations.finish(first, "completed")
    assert client.post(OPTIMIZE, headers=bob, json=body()).status_code == 200  # bob may start again


@pytest.mark.parametrize("change, status, code, says", [
    ({"train_goldens": capital_goldens(24)}, 400, "INSUFFICIENT_GOLDEN_EXAMPLES", "at least 25"),
    ({"train_goldens": capital_goldens(2), "prototype_mode": True}, 400, "INSUFFICIENT_GOLDEN_EXAMPLES", "at least 3"),
    ({"train_goldens": capital_goldens(196)}, 400, "TOO_MANY_GOLDEN_EXAMPLES", "at most 200"),
    ({"test_goldens": []}, 400, "INSUFFICIENT_GOLDEN_EXAMPLES", "test_goldens"),
    ({"train_goldens": None, "test_goldens": None}, 422, "MISSING_GOLDENS", "neither"),
    ({"test_goldens": None}, 422, "MISSING_GOLDENS", "test_goldens is required"),
    ({"goldens": capital_goldens(30)}, 400, "GOLDENS_CONFLICT", "not both"),
    ({"target_models": []}, 400, "TARGET_MODEL_COUNT_EXCEEDED", "1 to 3"),
    ({"target_models": [{"provider": "openai", "model": m} for m in ("gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini")]},
     400, "TARGET_MODEL_COUNT_EXCEEDED", "starter tier allows 1 to 3"),
    ({"target_models": [{"provider": "openai", "model": "gpt-9-imaginary"}]}, 400, "UNSUPPORTED_MODEL",
     "openai/gpt-9-imaginary"),
    ({"origin_model": {"provider": "nobody", "model": "x"}}, 400, "UNSUPPORTED_MODEL", "nobody/x"),
    ({"fields": ["question", "context"]}, 400, "FIELDS_MISMATCH", "['context']"),
    ({"template": "Q: {query}"}, 400, "FIELDS_MISMATCH", "query"),
    ({"template": "Q: {question"}, 400, "INVALID_TEMPLATE", "placeholder"),
    ({"evaluation_metric": "BLEU"}, 400, "UNSUPPORTED_METRIC", "BLEU"),
    ({"evaluation_config": "not json"}, 400, "INVALID_EVALUATION_CONFIG", "JSON object"),
    ({"evaluation_config": {"llm_judge": "openai/gpt-4o", "llm_judging_prompt": "Rate {answer}"}}, 400,
     "INVALID_EVALUATION_CONFIG", "{question}"),
    ({"evaluation_config": {"llm_judge": "openai/nope", "llm_judging_prompt": "{question} {answer}"}}, 400,
     "UNSUPPORTED_MODEL", "openai/nope"),
])
def test_refusals(client, optimizer_headers, launcher, change, status, code, says):
    err = error(client.post(OPTIMIZE, headers=optimizer_headers(), json=body(**change)), status, code)
    assert err["type"] == "validation_error" and says in err["message"], err
    assert launcher.triggered == []


def test_golden_keys_and_answers_are_checked(client, optimizer_headers):
    h = optimizer_headers()
    train = capital_goldens(25)
    train[7] = {"fields": {"q": "x"}, "answer": "y"}
    err = error(client.post(OPTIMIZE, headers=h, json=body(train_goldens=train)), 400, "GOLDEN_FIELDS_MISMATCH")
    assert "train_goldens[7]" in err["message"] and err["details"]["missing"] == ["question"]
    train = capital_goldens(25)
    train[3]["answer"] = None
    err = error(client.post(OPTIMIZE, headers=h, json=body(train_goldens=train, evaluation_metric="JSON_Match")),
                400, "MISSING_ANSWERS")
    assert "supervised" in err["message"]
    # A custom judge is unsupervised: no answers needed.
    unanswered = [{"fields": g["fields"]} for g in capital_goldens(30)]
    config = {"llm_judge": "openai/gpt-4o-mini", "llm_judging_prompt": "Question: {question}\nAnswer: {answer}",
              "correctness_cutoff": 0.7}
    r = client.post(OPTIMIZE, headers=h, json=body(train_goldens=None, test_goldens=None, goldens=unanswered,
                                                  evaluation_config=json.dumps(config)))
    assert r.status_code == 200, r.text
    results = client.get(f"/v2/prompt/optimizeResults/{r.json()['optimization_run_id']}", headers=h).json()
    assert json.loads(results["evaluation_config"]) == config and results["evaluation_metric"] is None


def test_access_and_ownership(client, auth, optimizer_headers):
    no_access = auth("dave", tier="enterprise")
    err = error(client.post(OPTIMIZE, headers=no_access, json=body()), 401, "UNAUTHORIZED")
    assert err["type"] == "authentication_error" and "prompt optimization" in err["message"]
    bob, eve = optimizer_headers("bob"), optimizer_headers("eve")
    run_id = client.post(OPTIMIZE, headers=bob, json=body()).json()["optimization_run_id"]
    error(client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=eve), 403, "RUN_ID_NOT_OWNED")
    error(client.get(f"/v2/prompt/optimize/{run_id}/costs", headers=eve), 403, "RUN_ID_NOT_OWNED")
    error(client.get(f"/v2/prompt/optimizeStatus/{run_id}", headers=eve), 404, "RUN_ID_NOT_FOUND")
    for path in ("optimizeStatus/nope", "optimizeResults/nope", "optimize/nope/costs"):
        err = error(client.get(f"/v2/prompt/{path}", headers=bob), 404, "RUN_ID_NOT_FOUND")
        assert err["type"] == "not_found_error"
    error(client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=no_access), 401, "UNAUTHORIZED")


def test_tier_limits(client, optimizer_headers):
    models = [{"provider": "openai", "model": m} for m in ("gpt-4o", "gpt-4o-mini")]
    error(client.post(OPTIMIZE, headers=optimizer_headers("fay", tier="free"), json=body(target_models=models)),
          400, "TARGET_MODEL_COUNT_EXCEEDED")
    assert client.post(OPTIMIZE, headers=optimizer_headers("gus", tier="startup"),
                       json=body(target_models=models)).status_code == 200


def test_flow_unavailable_fails_the_run(client, launcher, optimizer_headers):
    launcher.fail_with = RuntimeError("prefect is down")
    h = optimizer_headers()
    error(client.post(OPTIMIZE, headers=h, json=body()), 503, "FLOW_UNAVAILABLE")
    launcher.fail_with = None
    assert client.post(OPTIMIZE, headers=h, json=body()).status_code == 200  # nothing left open


def test_adapt_names_serve_the_same_runs(client, optimizer_headers):
    h = optimizer_headers()
    run_id = client.post("/v2/prompt/adapt", headers=h, json=body(prototype_mode=True,
                                                                  train_goldens=capital_goldens(3))).json()[
        "adaptation_run_id"]
    assert client.get(f"/v2/prompt/adaptStatus/{run_id}", headers=h).json() == {
        "adaptation_run_id": run_id, "status": "queued", "queue_position": 1}
    assert client.get(f"/v2/prompt/adaptResults/{run_id}", headers=h).json()["prototype_mode"] is True
    assert client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()["id"] == run_id


def test_results_and_costs_read_what_the_flow_stored(client, optimizer_headers):
    """Results and costs as the flow leaves them: a completed target, a failed one, the origin, usage records."""
    h = optimizer_headers("bob", tier="startup")
    targets = [{"provider": "openai", "model": "gpt-4o-mini"}, {"provider": "anthropic", "model": "claude-haiku-4-5"}]
    run_id = client.post(OPTIMIZE, headers=h, json=body(target_models=targets, origin_model={
        "provider": "openai", "model": "gpt-4o"})).json()["optimization_run_id"]
    store = client.app.state.services.store
    store.optimizations.begin(run_id)
    ledger = Ledger(run_id, "bob", "bob", 10.0)
    for position, (p, m, price) in enumerate([("openai", "gpt-4o-mini", (0.15, 0.6)),
                                               ("anthropic", "claude-haiku-4-5", (1.0, 5.0))]):
        for task in ("pre-optimization evaluation", "optimization", "post-optimization evaluation"):
            ledger.add(provider=p, model=m, prices=price, usage={"prompt_tokens": 1000, "completion_tokens": 100},
                       task_type=task, position=position, role="target", latency_s=0.1)
    ledger.add(provider="openai", model="gpt-4o", prices=(2.5, 10.0), usage={"prompt_tokens": 10, "completion_tokens": 1},
               task_type="pre-optimization evaluation", position=-1, role="origin", latency_s=0.25)
    events.append(get_settings().events_dir, "llm_usage", pa.Table.from_pylist(ledger.records,
                                                                                schema=ledger.table([]).schema))
    cost0 = sum(r["total_cost"] for r in ledger.for_position(0))
    store.optimizations.record_model_result(run_id, ModelResult(-1, "openai", "gpt-4o", "completed", 0.4, '{"score": 0.4}',
                                                  cost=0.000035, num_requests=1))
    store.optimizations.record_model_result(run_id, ModelResult(0, "openai", "gpt-4o-mini", "completed", 0.25, "{}", 1.0, "{}",
                                                  "Be brief.", "Question: {question}", cost0, 3))
    mid = client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()
    assert mid["job_status"] == "processing" and mid["target_models"][1]["result_status"] == "queued"
    store.optimizations.finish(run_id, "failed", "1 of 2 target models failed; see their results")
    results = client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()
    assert results["job_status"] == "failed"
    done, failed = results["target_models"]
    assert done["score_improvement"] == pytest.approx(0.75) and done["evaluation_type"] == "LLMaaJ:Sem_Sim_1"
    assert done["system_prompt"] == "Be brief." and done["user_message_template"] == "Question: {question}"
    assert failed["result_status"] == "failed" and failed["system_prompt"] is None and failed["error"]
    assert results["origin_model"]["score"] == 0.4 and results["origin_model"]["model_name"] == "openai/gpt-4o"
    assert {m["model"]: m["num_requests"] for m in results["llm_request_metrics"]} == {
        "openai/gpt-4o-mini": 3, "anthropic/claude-haiku-4-5": 3, "openai/gpt-4o": 1}
    costs = client.get(f"/v2/prompt/optimize/{run_id}/costs", headers=h).json()
    assert len(costs["usage_records"]) == 7
    assert costs["total_cost"] == pytest.approx(sum(r["total_cost"] for r in costs["usage_records"]))
    first = costs["usage_records"][0]
    assert set(first) == {"id", "user_id", "organization_id", "adaptation_run_id", "optimization_run_id", "provider",
                          "model", "input_tokens", "output_tokens", "input_cost", "output_cost", "total_cost",
                          "timestamp", "task_type", "role", "latency_s"}  # the last two beside the interface's
    assert {(r["model"], r["role"], r["latency_s"]) for r in costs["usage_records"] if r["model"] == "gpt-4o"} == {
        ("gpt-4o", "origin", 0.25)}
    mini = [r for r in costs["usage_records"] if r["model"] == "gpt-4o-mini"]
    assert sum(r["total_cost"] for r in mini) == pytest.approx(done["cost"])
    assert mini[0]["input_cost"] == pytest.approx(1000 * 0.15 / 1e6)


def test_restart_fails_open_runs(client, optimizer_headers, data_dir):
    from litestar.testing import TestClient

    from api.app import create_app

    h = optimizer_headers()
    run_id = client.post(OPTIMIZE, headers=h, json=body()).json()["optimization_run_id"]
    client.app.state.services.store.optimizations.begin(run_id)
    client.__exit__(None, None, None)  # the service stops while the run is processing
    with TestClient(create_app(publish_owner=False)) as again:
        status = again.get(f"/v2/prompt/optimizeStatus/{run_id}", headers=h).json()
        assert status["status"] == "failed" and "restart" in status["error"]
        results = again.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()
        assert results["target_models"][0]["result_status"] == "failed"
        again.app.state.services.prompt_optimization.launcher = FakeLauncher()
        assert again.post(OPTIMIZE, headers=h, json=body()).status_code == 200


def test_baseline_score_without_origin_and_runs_closed_by_housekeeping(client, optimizer_headers):
    h = optimizer_headers()
    run_id = client.post(OPTIMIZE, headers=h, json=body(origin_model_evaluation_score=0.42)).json()[
        "optimization_run_id"]
    results = client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()
    assert results["origin_model"]["score"] == 0.42 and results["origin_model"]["model_name"] is None
    # Housekeeping closes a job whose flow run crashed; its targets must not read as still running.
    client.app.state.services.store.jobs.update(run_id, status="failed", error="flow run crashed", only_if_open=True)
    [target] = client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()["target_models"]
    assert target["result_status"] == "failed" and target["error"] == "flow run crashed"
