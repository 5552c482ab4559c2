"""Prompt optimization end to end: the official client starts a run on a real `switchboard serve`, the served
optimize-prompt flow optimizes against the fake OpenAI-compatible server, and status, results and costs agree."""

from __future__ import annotations

import time

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
    costs = client.prompt_optimization.retrieve_costs(run_id)
    assert costs.optimization_run_id == run_id and costs.usage_records
    assert costs.total_cost == pytest.approx(sum(r.total_cost for r in costs.usage_records))
    assert {r.task_type for r in costs.usage_records} == {"pre-optimization evaluation", "optimization",
                                                          "post-optimization evaluation"}
    by_model = {m["model"]: m["num_requests"] for m in results.llm_request_metrics}
    assert sum(by_model.values()) == len(costs.usage_records)
    assert sum(t.cost for t in results.target_models) == pytest.approx(costs.total_cost)
