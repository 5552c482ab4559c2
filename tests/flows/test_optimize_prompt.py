"""The `optimize-prompt` flow under Prefect's test harness, against the fake OpenAI-compatible server: scores
improve, prompts keep their placeholders, a failing target fails alone, the cost ceiling stops a run, a model without
credentials fails the run at once, and every LLM call is a usage record whose costs sum to each target's cost. The
flow run's Prefect state is the run's JobStatus: Completed when it completed, Failed (with the run's error) when it
failed, also partly."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import pytest

from api.settings import get_settings, reset_settings
from storage.optimization_records import ORIGIN
from tests.support.fakes.openai_server import OBEY_PHRASE, FakeOpenAI
from tests.support.fakes.provider import fake_provider
from tests.support.optimization import TEMPLATE, run_flow, start_run, stored

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture
def fake_llm(data_dir, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with fake_provider(monkeypatch, retries=1) as fake:
        yield fake


def test_optimization_improves_scores_and_costs_add_up(fake_llm):
    run_id = start_run([("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5")], fake=fake_llm)
    state, summary = run_flow(run_id)
    assert state.is_completed() and summary["status"] == "completed"
    run, usage = stored(run_id)
    assert run.status == "completed" and run.error is None
    origin, *targets = run.results
    assert origin.position == ORIGIN and origin.result_status == "completed" and 0 < origin.pre_score < 1
    for t in targets:
        assert t.result_status == "completed"
        assert t.pre_score < 0.8 and t.post_score == 1.0, (t.model, t.pre_score, t.post_score)
        assert OBEY_PHRASE in t.system_prompt.lower() and t.system_prompt.startswith("You are a geography assistant.")
        assert t.user_message_template == TEMPLATE  # the caller's placeholders, unchanged
        saved = get_settings().artefacts_dir / "prompt_optimization" / run_id / f"target-{t.position}.json"
        assert json.loads(saved.read_text())["respond"]["signature"]["instructions"] == t.system_prompt
        mine = [r for r in usage if r["position"] == t.position]
        assert t.cost == pytest.approx(sum(r["total_cost"] for r in mine)) and t.cost > 0
        assert t.num_requests == len(mine)
        assert {r["task_type"] for r in mine} == {"pre-optimization evaluation", "optimization",
                                                   "post-optimization evaluation"}
    # Every call the fake answered is one usage record, billed at catalogue prices.
    assert len(usage) == len(fake_llm.calls) == summary["calls"]
    assert Counter(r["model"] for r in usage)["gpt-4o"] >= 8 + 2  # origin answers + a reflection per target
    mini = next(r for r in usage if r["model"] == "gpt-4o-mini" and r["task_type"] == "optimization")
    assert mini["input_cost"] == pytest.approx(mini["input_tokens"] * 0.15 / 1e6)
    assert sum(r["total_cost"] for r in usage) == pytest.approx(summary["total_cost"])


def test_a_failing_target_fails_alone_and_flaky_ones_are_retried(fake_llm):
    fake_llm.failing.add("claude-haiku-4-5")
    fake_llm.flaky["gpt-4o-mini"] = 1  # one transient 503: LiteLLM retries it
    run_id = start_run([("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5")], origin=None, fake=fake_llm,
                       evaluation_metric="JSON_Match", as_json=True)
    state, summary = run_flow(run_id)
    run, _ = stored(run_id)
    ok, bad = run.results
    assert ok.result_status == "completed" and ok.post_score == 1.0
    assert bad.result_status == "failed" and bad.system_prompt is None and bad.user_message_template is None
    # The kind of failure and what to do; the provider's own text (it may echo the request) stays in the log.
    assert "LMServerError" in bad.error or "500" in bad.error
    assert run.status == "failed" and "1 of 2 target models failed: anthropic/claude-haiku-4-5" in run.error
    # Partly failed is failed: the flow run is Failed with the run's error, as the status endpoint reports it.
    assert state.is_failed() and state.message == run.error and summary["status"] == "failed"


def test_the_cost_ceiling_stops_the_run(fake_llm, monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_MAX_COST_USD", "0.0005")
    reset_settings()
    run_id = start_run([("openai", "gpt-4o-mini")], origin=None, fake=fake_llm)
    state, _ = run_flow(run_id)
    run, usage = stored(run_id)
    assert run.status == "failed" and "ceiling of $0.0005" in run.error
    assert state.is_failed() and state.message == run.error
    [target] = run.results
    assert target.result_status == "failed" and "ceiling" in target.error and target.system_prompt is None
    spent = sum(r["total_cost"] for r in usage)
    assert spent == pytest.approx(target.cost) and spent < 0.0005 + 0.0002  # stopped within one call's cost


def test_a_model_without_credentials_fails_the_run_at_once_and_the_flow_run_is_failed(fake_llm, monkeypatch):
    """No base URL and no key for OpenAI (the targets' and the reflection model's provider): every target fails
    before its first call, naming the setting, without retries; the flow run is Failed, not Completed."""
    run_id = start_run([("openai", "gpt-4o-mini"), ("anthropic", "claude-haiku-4-5")], fake=fake_llm)
    monkeypatch.delenv("SWITCHBOARD_LLM_API_BASE")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SWITCHBOARD_ANTHROPIC_API_BASE", fake_llm.base_url)  # anthropic stays reachable
    reset_settings()
    state, summary = run_flow(run_id)
    run, usage = stored(run_id)
    assert run.status == "failed" and state.is_failed() and state.message == run.error
    assert summary == {"run_id": run_id, "status": "failed", "total_cost": 0.0, "calls": 0}
    assert fake_llm.calls == [] and usage == []  # nothing sent, nothing retried
    origin, *targets = run.results
    for result in run.results:
        assert result.result_status == "failed" and result.system_prompt is None
        assert "ProviderNotConfigured" in result.error and "OPENAI_API_KEY" in result.error, result.error
        assert "SWITCHBOARD_OPENAI_API_BASE" in result.error
    assert "openai/gpt-4o (reflection model)" in targets[1].error  # the Anthropic target needs OpenAI's reflection
    assert "openai/gpt-4o (origin model)" in origin.error
    assert "2 of 2 target models failed" in run.error and "OPENAI_API_KEY" in run.error
    # A flow run started again for the closed run does nothing and ends in the run's state, not Completed.
    again, _ = run_flow(run_id)
    assert again.is_failed() and "had already failed" in again.message and stored(run_id)[0].error == run.error


def test_a_user_budget_stops_the_run_and_every_call_it_allowed_is_counted(fake_llm):
    """Issue 34: prompt optimization passes the same budget check as the gateway (api/budgets.py). A daily budget
    of the user stops the run with the refusal as its error; the spend settled equals the usage log's."""
    from storage.budget_records import Spender
    from storage.store import LocalStore

    run_id = start_run([("openai", "gpt-4o-mini")], origin=None, fake=fake_llm)
    store = LocalStore(get_settings().db_path)
    try:
        store.budgets.set_budget("cli", "alice", "user", "alice", "day", 0.001)
    finally:
        store.close()
    state, _ = run_flow(run_id)
    run, usage = stored(run_id)
    assert run.status == "failed" and state.is_failed()
    assert "budget exceeded: the daily budget of user alice" in run.error
    store = LocalStore(get_settings().db_path)
    try:
        [status] = store.budgets.status(Spender(None, "alice", "alice"))
    finally:
        store.close()
    spent = sum(r["total_cost"] for r in usage)
    assert usage and status.spent_usd == pytest.approx(spent) and status.reserved_usd == pytest.approx(0.0)
    assert spent <= 0.001
