"""Prompt optimization end to end: the official client starts a run on a real `switchboard serve`, the served
optimize-prompt flow optimizes against the fake OpenAI-compatible server, and status, results and costs agree; a
run where one target fails is failed in the API and a Failed flow run (with that target's task run Failed) in
Prefect."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest
from notdiamond import NotDiamond

from tests.support.fakes.openai_server import OBEY_PHRASE, FakeOpenAI, capital_goldens, teach_goldens
from tests.support.service import Service

pytestmark = pytest.mark.e2e


def test_official_client_optimizes_a_prompt(service: Service, fake_llm_server: FakeOpenAI) -> None:
    client = NotDiamond(api_key=service.admin_key, base_url=service.api_url, max_retries=0)
    train, test = capital_goldens(25, start=100), capital_goldens(6, start=125)
    teach_goldens(fake_llm_server, train + test)
    started = client.prompt_optimization.optimize(
        system_prompt="You are a geography assistant.", template="Question: {question}", fields=["question"],
        train_goldens=train, test_goldens=test, target_models=[{"provider": "openai", "model": "gpt-4o-mini"},
                                                               {"provider": "openai", "model": "gpt-4.1-mini"}],
        origin_model={"provider": "openai", "model": "gpt-4o"}, origin_model_evaluation_score=0.5,
        evaluation_metric="LLMaaJ:Sem_Sim_1")
    run_id = started.optimization_run_id
    seen = set()
    deadline = time.monotonic() + 150
    while True:
        status = client.prompt_optimization.get_optimziation_status(run_id)
        seen.add(status.status)
        if status.status in ("completed", "failed"):
            break
        if status.status == "queued":
            assert status.queue_position == 1
        assert time.monotonic() < deadline, f"run still {status.status} after 150 s"
        time.sleep(0.5)
    assert status.status == "completed", status
    results = client.prompt_optimization.get_optimization_results(run_id)
    assert results.job_status == "completed" and results.prototype_mode is False
    assert results.origin_model.score == 0.5 and results.origin_model.cost == 0  # the given baseline: not evaluated
    for target in results.target_models:
        assert target.result_status == "completed"
        assert target.post_optimization_score == 1.0 > target.pre_optimization_score
        assert OBEY_PHRASE in target.system_prompt.lower() and target.user_message_template == "Question: {question}"
        assert target.user_message_template_fields == ["question"]
        never_worse = target.post_optimization_evals["never_worse"]  # the optimized prompt beat the original
        assert never_worse["returned"] == "optimized" and never_worse["difference"] > 0
    costs = client.prompt_optimization.retrieve_costs(run_id)
    assert costs.optimization_run_id == run_id and costs.usage_records
    assert costs.total_cost == pytest.approx(sum(r.total_cost for r in costs.usage_records))
    assert {r.task_type for r in costs.usage_records} == {"pre-optimization evaluation", "optimization",
                                                          "post-optimization evaluation"}
    # Beside the interface's fields, each record's role and latency (the origin's score was given: no origin calls).
    assert {r.role for r in costs.usage_records} == {"target", "judge", "reflection"}
    assert all(r.latency_s >= 0 for r in costs.usage_records)
    by_model = {m["model"]: m["num_requests"] for m in results.llm_request_metrics}
    assert sum(by_model.values()) == len(costs.usage_records)
    assert sum(t.cost for t in results.target_models) == pytest.approx(costs.total_cost)


def flow_run_states(service: Service, run_id: str) -> tuple[str, str | None, dict[str, str]]:
    """(state type, state message) of the run's flow run, once final, and the state type of each of its task runs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId, FlowRunFilterName
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    async def read() -> tuple[str, str | None, dict[str, str]]:
        async with get_client() as client:
            deadline = time.monotonic() + 60
            while True:
                [run] = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    name=FlowRunFilterName(any_=[f"optimize-prompt {run_id}"])))
                if run.state.is_final() or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.5)
            tasks = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run.id])))
        return run.state.type.value, run.state.message, {t.name: t.state.type.value for t in tasks}

    with temporary_settings({PREFECT_API_URL: service.prefect_url, PREFECT_API_AUTH_STRING: service.prefect_login}):
        return asyncio.run(read())


def test_a_partly_failed_run_is_a_failed_flow_run(service: Service, fake_llm_server: FakeOpenAI) -> None:
    refusing = "gpt-4.1-nano"  # its provider refuses every call (a 401, never retried)
    train, test = capital_goldens(3, start=200, as_json=True), capital_goldens(2, start=203, as_json=True)
    teach_goldens(fake_llm_server, train + test)
    fake_llm_server.echo_key.add(refusing)
    try:
        r = httpx.post(f"{service.api_url}/v2/prompt/optimize", headers=service.headers, timeout=30, json={
            "system_prompt": "You are a geography assistant.", "template": "Question: {question}",
            "fields": ["question"], "train_goldens": train, "test_goldens": test, "prototype_mode": True,
            "evaluation_metric": "JSON_Match", "target_models": [{"provider": "openai", "model": "gpt-4o-mini"},
                                                                 {"provider": "openai", "model": refusing}]})
        assert r.status_code == 200, r.text
        run_id = r.json()["optimization_run_id"]
        deadline = time.monotonic() + 150
        while (status := httpx.get(f"{service.api_url}/v2/prompt/optimizeStatus/{run_id}", headers=service.headers,
                                   timeout=30).json())["status"] not in ("completed", "failed"):
            assert time.monotonic() < deadline, f"run still {status['status']} after 150 s"
            time.sleep(0.5)
    finally:
        fake_llm_server.echo_key.discard(refusing)
    assert status["status"] == "failed" and "1 of 2 target models failed: openai/gpt-4.1-nano" in status["error"]
    results = httpx.get(f"{service.api_url}/v2/prompt/optimizeResults/{run_id}", headers=service.headers,
                        timeout=30).json()
    assert [t["result_status"] for t in results["target_models"]] == ["completed", "failed"]
    state, message, tasks = flow_run_states(service, run_id)
    assert (state, message) == ("FAILED", status["error"])  # red in the runs list, saying why
    assert tasks["optimize-target openai/gpt-4o-mini"] == "COMPLETED"
    assert tasks[f"optimize-target openai/{refusing}"] == "FAILED"
