"""The real-model harness (benchmarks/prompt_optimization_real.py) as a smoke test: its shipped suite runs through a
real `switchboard serve` against the suite's fake model, as a user would run it against real servers, so it stays
working. The fake answers each task's goldens well only when the prompt asks for the bare answer, so every task
gains."""

from __future__ import annotations

import pytest

from benchmarks.prompt_optimization_real import TASKS, Models, load_task, report, run_suite
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import Service

pytestmark = pytest.mark.e2e


def test_the_harness_runs_its_suite_against_the_fake_model(service: Service, fake_llm_server: FakeOpenAI) -> None:
    for name in TASKS:
        task = load_task(name)
        fake_llm_server.teach({next(iter(g["fields"].values())): g["answer"]
                               for g in task["train_goldens"] + task["test_goldens"]})
    assert service.admin_key
    results = run_suite(service.api_url, service.admin_key, Models("smollm2-135m", "judge-7b", "writer-7b"),
                        max_train=3, max_test=3, deadline_s=150)
    assert [r.task for r in results] == list(TASKS)
    for r in results:
        assert r.status == "completed", r
        assert r.before is not None and r.after is not None and r.after >= r.before
        assert r.verdict["returned"] in ("optimized", "original") and r.verdict["num_examples"] == 3
        assert {"target", "reflection"} <= set(r.calls_by_role)
    assert "judge" in results[TASKS.index("qa")].calls_by_role  # the one task scored by an LLM judge
    assert any(r.verdict["returned"] == "optimized" and r.after > r.before for r in results)
    printed = report(results, 1.0)
    print(printed)
    assert all(name in printed for name in TASKS) and "cost by role" in printed
