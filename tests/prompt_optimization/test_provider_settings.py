"""POST /v2/prompt/optimize refuses a run that needs a model this service cannot call (no base URL, no key): 400
PROVIDER_NOT_CONFIGURED naming the setting, nothing queued, nothing stored. A key or a base URL override (for the
provider, or SWITCHBOARD_LLM_API_BASE for all) makes a provider reachable; the judge, the reflection model and an
origin model to evaluate are checked like the targets."""

from __future__ import annotations

import os

import pytest

from api.settings import get_settings, reset_settings
from tests.support.optimization import OPTIMIZE, body

pytestmark = pytest.mark.usefixtures("launcher")

HAIKU = {"provider": "anthropic", "model": "claude-haiku-4-5"}


@pytest.fixture
def configure(client, monkeypatch: pytest.MonkeyPatch):
    """configure(**env): the service as started with only these provider settings (no other key or base URL)."""

    def apply(**env: str) -> None:
        for name in list(os.environ):
            if name.endswith(("_API_KEY", "_TOKEN", "_API_BASE")):
                monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        reset_settings()
        client.app.state.services.prompt_optimization.settings = get_settings()  # read once at start-up

    return apply


def refused(r) -> dict:
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "PROVIDER_NOT_CONFIGURED" and err["type"] == "validation_error", err
    assert set(err) == {"code", "message", "type", "request_id", "details"}
    return err


def test_a_run_no_provider_can_serve_is_refused_naming_the_settings(client, configure, launcher, optimizer_headers):
    configure()
    h = optimizer_headers()
    err = refused(client.post(OPTIMIZE, headers=h, json=body()))
    assert err["message"] == (
        "this service cannot call every model the run needs; no credentials for provider openai, needed by "
        "openai/gpt-4o-mini (target model), openai/gpt-4o-mini (judge model), openai/gpt-4o (reflection model): set "
        "OPENAI_API_KEY, or point openai at an OpenAI-compatible server with SWITCHBOARD_OPENAI_API_BASE "
        "(SWITCHBOARD_LLM_API_BASE for every provider), or name the model in the deployments file "
        "(SWITCHBOARD_DEPLOYMENTS)")
    assert err["details"] == {"unreachable": [{
        "provider": "openai", "set_one_of": ["OPENAI_API_KEY"],
        "or_base_url": ["SWITCHBOARD_OPENAI_API_BASE", "SWITCHBOARD_LLM_API_BASE"],
        "or_deployments_file": "SWITCHBOARD_DEPLOYMENTS",
        "models": [{"model": "openai/gpt-4o-mini", "role": "target model"},
                   {"model": "openai/gpt-4o-mini", "role": "judge model"},
                   {"model": "openai/gpt-4o", "role": "reflection model"}]}]}
    assert launcher.triggered == []
    # Nothing was stored: once a key is there, the same user starts a run at once (no open run in the way).
    configure(OPENAI_API_KEY="sk-test-never-sent")
    r = client.post(OPTIMIZE, headers=h, json=body())
    assert r.status_code == 200, r.text
    assert launcher.triggered == [("optimize-prompt/optimize-prompt", {"run_id": r.json()["optimization_run_id"]})]


def test_a_base_url_override_makes_a_provider_reachable(client, configure, optimizer_headers):
    configure(SWITCHBOARD_OPENAI_API_BASE="http://127.0.0.1:9/v1")  # a self-hosted server for OpenAI's models
    h = optimizer_headers(tier="startup")
    assert client.post(OPTIMIZE, headers=h, json=body()).status_code == 200
    err = refused(client.post(OPTIMIZE, headers=optimizer_headers("carol"), json=body(
        target_models=[{"provider": "openai", "model": "gpt-4o-mini"}, HAIKU])))
    [anthropic] = err["details"]["unreachable"]  # only the provider that lacks both
    assert anthropic["provider"] == "anthropic" and anthropic["models"] == [
        {"model": "anthropic/claude-haiku-4-5", "role": "target model"}]
    assert anthropic["set_one_of"] == ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]
    assert "SWITCHBOARD_ANTHROPIC_API_BASE" in err["message"] and "ANTHROPIC_API_KEY" in err["message"]

    configure(SWITCHBOARD_LLM_API_BASE="http://127.0.0.1:9/v1")  # one base URL for every provider
    assert client.post(OPTIMIZE, headers=optimizer_headers("carol"), json=body(
        target_models=[{"provider": "openai", "model": "gpt-4o-mini"}, HAIKU])).status_code == 200


def test_the_judge_reflection_and_origin_models_are_checked_only_when_called(client, configure, optimizer_headers,
                                                                           monkeypatch):
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_JUDGE_MODEL", "anthropic/claude-haiku-4-5")
    configure(OPENAI_API_KEY="sk-test-never-sent")
    user = iter(f"user{i}" for i in range(10))
    err = refused(client.post(OPTIMIZE, headers=optimizer_headers(next(user)), json=body()))
    [judge] = err["details"]["unreachable"]
    assert judge["models"] == [{"model": "anthropic/claude-haiku-4-5", "role": "judge model"}]
    # JSON_Match has no judge: the same service takes the run.
    assert client.post(OPTIMIZE, headers=optimizer_headers(next(user)), json=body(
        evaluation_metric="JSON_Match")).status_code == 200
    # A custom judge is the caller's choice of model, checked the same way.
    config = {"llm_judge": "anthropic/claude-haiku-4-5", "llm_judging_prompt": "{question} {answer}"}
    err = refused(client.post(OPTIMIZE, headers=optimizer_headers(next(user)), json=body(evaluation_config=config)))
    assert "anthropic/claude-haiku-4-5 (judge model)" in err["message"]
    # An origin model is evaluated unless its score is given.
    err = refused(client.post(OPTIMIZE, headers=optimizer_headers(next(user)), json=body(
        evaluation_metric="JSON_Match", origin_model=HAIKU)))
    assert "anthropic/claude-haiku-4-5 (origin model)" in err["message"]
    assert client.post(OPTIMIZE, headers=optimizer_headers(next(user)), json=body(
        evaluation_metric="JSON_Match", origin_model=HAIKU, origin_model_evaluation_score=0.5)).status_code == 200
    # GEPA's reflection model is the service's own setting, and every run needs it.
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_REFLECTION_MODEL", "anthropic/claude-haiku-4-5")
    configure(OPENAI_API_KEY="sk-test-never-sent")
    err = refused(client.post(OPTIMIZE, headers=optimizer_headers(next(user)),
                              json=body(evaluation_metric="JSON_Match")))
    assert "anthropic/claude-haiku-4-5 (reflection model)" in err["message"]
