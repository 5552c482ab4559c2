"""The one provider resolver (api/deployments.py): the deployments file, then SWITCHBOARD_<PROVIDER>_*, then the
provider's usual key variable; the file's checks; a named model as a routing candidate and a prompt-optimization
model; the weighted draw and the cool-down of api/gateway/balancing.py. (Through the real server:
tests/gateway/test_deployments_gateway.py.)"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from api import deployments
from api.deployments import Route, load, routes
from api.gateway.balancing import COOL_AFTER, Balancer
from api.settings import OptimizeSettings

YAML = """
models:
  local/llama3-8b:
    context_length: 8192
    input_price: 0.1
    output_price: 0.2
    deployments:
      - {model: meta-llama/Meta-Llama-3-8B-Instruct, api_base: "http://gpu-1:8000/v1", api_key_env: LOCAL_KEY}
  openai/gpt-4o-mini:
    deployments:
      - {model: gpt-4o-mini, provider: openai, api_key_env: OPENAI_EU_KEY, weight: 3}
      - {model: gpt-4o-mini-2024-07-18, api_base: "http://replica:8000/v1"}
"""
TOML = """
[models."local/qwen"]
deployments = [{model = "qwen2.5-7b", api_base = "http://gpu-2:8000/v1"}]
"""


@pytest.fixture
def deployments_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "deployments.yaml"
    path.write_text(YAML)
    monkeypatch.setenv("SWITCHBOARD_DEPLOYMENTS", str(path))
    monkeypatch.setenv("LOCAL_KEY", "sk-local-secret")
    monkeypatch.setenv("OPENAI_EU_KEY", "sk-eu-secret")
    return path


def test_the_file_comes_first_with_its_own_model_ids_keys_and_weights(deployments_file: Path) -> None:
    local = routes("local", "llama3-8b", OptimizeSettings())
    assert local == (Route("local/llama3-8b#0", "http://gpu-1:8000/v1", "sk-local-secret",
                           "meta-llama/Meta-Llama-3-8B-Instruct", 1.0, "deployments file"),)
    mini = routes("openai", "gpt-4o-mini", OptimizeSettings(api_keys=(("openai", "sk-other"),)))
    assert [(r.base, r.key, r.model, r.weight) for r in mini] == [
        ("https://api.openai.com/v1", "sk-eu-secret", "gpt-4o-mini", 3.0),  # the provider's own endpoint
        ("http://replica:8000/v1", None, "gpt-4o-mini-2024-07-18", 1.0)]
    assert deployments.deployment_keys() == ("sk-local-secret", "sk-eu-secret")  # redacted like the others


def test_toml_works_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "deployments.toml"
    path.write_text(TOML)
    monkeypatch.setenv("SWITCHBOARD_DEPLOYMENTS", str(path))
    assert [r.model for r in routes("local", "qwen", OptimizeSettings())] == ["qwen2.5-7b"]


def test_then_switchboard_settings_then_the_usual_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWITCHBOARD_DEPLOYMENTS", raising=False)
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    own = OptimizeSettings(api_bases=(("openai", "http://proxy/v1"),), api_keys=(("openai", "sk-sb"),))
    assert routes("openai", "gpt-4o", own) == (Route("openai", "http://proxy/v1", "sk-sb", "gpt-4o", 1.0,
                                                     "SWITCHBOARD_OPENAI_API_BASE"),)
    every = OptimizeSettings(api_bases=(("*", "http://all/v1"),))
    assert routes("openai", "gpt-4o", every)[0].source == "SWITCHBOARD_LLM_API_BASE"
    assert routes("mistral", "mistral-small", OptimizeSettings()) == ()
    monkeypatch.setenv("MISTRAL_API_KEY", "sk-mistral")
    usual = routes("mistral", "mistral-small", OptimizeSettings())
    assert [(r.base, r.key, r.source) for r in usual] == [("https://api.mistral.ai/v1", "sk-mistral",
                                                           "MISTRAL_API_KEY")]
    assert deployments.sources(["mistral", "cohere"], OptimizeSettings()) == {"mistral": "MISTRAL_API_KEY"}


@pytest.mark.parametrize("text, problem", [
    ("models:\n  local/x:\n    deployments:\n      - {model: x, api_base: 'http://h/v1', api_key: sk-123}\n",
     "api_key_env"),
    ("models:\n  nameless:\n    deployments:\n      - {model: x, api_base: 'http://h/v1'}\n", "provider/model"),
    ("models:\n  local/x:\n    deployments:\n      - {model: x}\n", "needs api_base"),
    ("models:\n  local/x:\n    deployments: []\n", "length"),
    ("models: [\n", "not valid YAML"),
])
def test_a_bad_file_is_refused_with_the_reason(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=problem) as refused:
        load(path)
    assert "sk-123" not in str(refused.value)


def test_a_named_model_is_a_candidate_and_an_optimization_model(deployments_file: Path) -> None:
    from api.catalogue import load_catalogue
    from api.prompt_optimization.credentials import reachable
    from api.schemas.model_select import LLMProvider
    from api.selection.candidates import resolve
    from flows.prompt_opt.llm import litellm_route

    (local, catalogued) = resolve([LLMProvider(provider="local", model="llama3-8b"),
                                   LLMProvider(provider="openai", model="gpt-4o")], load_catalogue(), False)
    assert local.is_custom and local.candidate.key == "local/llama3-8b"
    assert (local.candidate.input_price, local.candidate.context_length) == (0.1, 8192)  # the file's figures
    assert not catalogued.is_custom
    assert reachable("local", OptimizeSettings(), "target model", "llama3-8b")
    assert not reachable("local", OptimizeSettings(), "target model", "other")
    assert litellm_route("local", "llama3-8b", OptimizeSettings(), "target") == {
        "model": "openai/meta-llama/Meta-Llama-3-8B-Instruct", "api_base": "http://gpu-1:8000/v1",
        "api_key": "sk-local-secret"}


def route(name: str, weight: float = 1.0) -> Route:
    return Route(name, "http://h/v1", None, "m", weight, "deployments file")


def test_the_draw_follows_the_weights_and_a_failing_deployment_cools_down() -> None:
    balancer = Balancer(cooldown_s=600, rng=random.Random(7))
    heavy, light = route("m#0", 3.0), route("m#1", 1.0)
    firsts = Counter(balancer.order([heavy, light])[0].deployment for _ in range(4000))
    assert 0.70 < firsts["m#0"] / 4000 < 0.80  # 3 : 1
    for _ in range(COOL_AFTER - 1):
        balancer.failed("m#0")
    assert not balancer.cooling("m#0")
    balancer.failed("m#0")
    assert balancer.cooling("m#0")
    assert all(balancer.order([heavy, light]) == [light, heavy] for _ in range(50))  # tried last while cooling
    balancer.succeeded("m#0")  # it answered (as the last resort): back in the draw
    assert not balancer.cooling("m#0") and balancer.order([heavy]) == [heavy]


def test_provider_not_configured_names_the_variables_to_set() -> None:
    from api.gateway.upstream import not_configured_message

    message = not_configured_message(["mistral"])
    assert all(name in message for name in ("SWITCHBOARD_MISTRAL_API_KEY", "MISTRAL_API_KEY",
                                            "SWITCHBOARD_MISTRAL_API_BASE", "SWITCHBOARD_DEPLOYMENTS"))
