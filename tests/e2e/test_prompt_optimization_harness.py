"""The real-model harness (benchmarks/prompt_optimization_real.py) as a smoke test: its short-answer QA task (the one
that calls every role: target, judge, reflection) runs through a real `switchboard serve` against the suite's fake
model, as a user would run it against real servers, so it stays working. The fake answers well only when the prompt
asks for the bare answer, so the task gains. (Every shipped task is accepted by the API in
tests/prompt_optimization/test_harness_goldens.py; one run here keeps the smoke to one flow run's time.)"""

from __future__ import annotations

import pytest

from benchmarks.prompt_optimization_real import Models, load_task, report, run_suite
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import Service

pytestmark = pytest.mark.e2e


def test_the_harness_runs_against_the_fake_model(service: Service, fake_llm_server: FakeOpenAI) -> None:
    task = load_task("qa")
    fake_llm_server.teach({g["fields"]["question"]: g["answer"] for g in task["train_goldens"] + task["test_goldens"]})
    assert service.admin_key
    [result] = run_suite(service.api_url, service.admin_key, Models("smollm2-135m", "judge-7b", "writer-7b"),
                         tasks=("qa",), max_train=3, max_test=3, deadline_s=150)
    assert result.status == "completed", result
    assert result.before is not None and result.after == 1.0 > result.before
    verdict = result.verdict
    assert verdict["returned"] == "optimized" and verdict["num_examples"] == 3
    assert verdict["difference_ci95"][0] <= verdict["difference"] <= verdict["difference_ci95"][1]
    assert set(result.calls_by_role) == {"target", "judge", "reflection"}
    printed = report([result], result.wall_s)
    assert "qa" in printed and "cost by role" in printed and "reflection" in printed
