"""Named deployments through the real server: a self-hosted model proxied and routed under its own name, two
deployments of one model with one failing every call (no client error, the failing one cooled down), and
GET /v1/models listing the file's names."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.service import LocalApi, running_api

ASK = [{"role": "user", "content": "What is the capital of Italy?"}]


@pytest.fixture(scope="module")
def deployed(fake_upstream: FakeOpenAI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalApi]:
    folder = tmp_path_factory.mktemp("deployments")
    (folder / "deployments.yaml").write_text(f"""
models:
  local/llama3-8b:
    context_length: 8192
    deployments:
      - {{model: llama3-8b-instruct, api_base: "{fake_upstream.base_url}", api_key_env: LOCAL_LLM_KEY}}
  openai/gpt-4.1-nano:
    input_price: 0.1
    output_price: 0.4
    deployments:
      - {{model: dead-replica, api_base: "http://127.0.0.1:9/v1"}}
      - {{model: gpt-4.1-nano, api_base: "{fake_upstream.base_url}"}}
""")
    env = {"SWITCHBOARD_DEPLOYMENTS": str(folder / "deployments.yaml"), "LOCAL_LLM_KEY": "sk-local-0123456789",
           "SWITCHBOARD_LLM_API_BASE": fake_upstream.base_url, "SWITCHBOARD_DEPLOYMENT_COOLDOWN_S": "600",
           "SWITCHBOARD_SESSION_FLUSH_SECONDS": "0.2"}
    with running_api(env) as api:
        yield api


@pytest.fixture
def client(deployed: LocalApi, upstream: FakeOpenAI) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{deployed.base}/v1", api_key=deployed.key, max_retries=0, timeout=30) as c:
        yield c


def test_a_self_hosted_model_is_proxied_under_its_own_name(client: openai.OpenAI, upstream: FakeOpenAI) -> None:
    answer = client.chat.completions.create(model="local/llama3-8b", messages=ASK)
    assert answer.model == "local/llama3-8b" and answer.choices[0].message.content
    assert upstream.bodies[-1]["model"] == "llama3-8b-instruct"  # the deployment's own model id
    assert upstream.keys[-1] == ("llama3-8b-instruct", "Bearer sk-local-0123456789")  # the key its variable holds


def test_a_self_hosted_model_is_a_routing_candidate(client: openai.OpenAI, upstream: FakeOpenAI) -> None:
    answer = client.chat.completions.create(model="switchboard", messages=ASK, extra_body={
        "llm_providers": ["local/llama3-8b", "openai/gpt-4o"], "cost_quality_tradeoff": 10})
    assert answer.model == "local/llama3-8b"  # free (no prices in the file): pure cost picks it


def test_one_failing_deployment_of_two_costs_no_client_error_and_cools_down(client: openai.OpenAI,
                                                                           upstream: FakeOpenAI) -> None:
    extra_attempts = 0
    for _ in range(200):
        raw = client.chat.completions.with_raw_response.create(model="openai/gpt-4.1-nano", messages=ASK)
        assert raw.parse().model == "openai/gpt-4.1-nano"  # every one answered: no client error
        extra_attempts += int(raw.headers["x-switchboard-attempts"]) - 1
    assert len(upstream.bodies) == 200 and {b["model"] for b in upstream.bodies} == {"gpt-4.1-nano"}
    # the dead replica is tried until it has failed 3 times in a row, then only after the healthy one
    assert 1 <= extra_attempts <= 3


def test_models_lists_what_the_caller_can_name(client: openai.OpenAI) -> None:
    names = [m.id for m in client.models.list()]
    assert names[0] == "switchboard" and {"local/llama3-8b", "openai/gpt-4.1-nano"} <= set(names)


def test_an_unknown_name_says_how_to_describe_or_deploy_it(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client.chat.completions.create(model="nowhere/model-x", messages=ASK)
    assert "SWITCHBOARD_DEPLOYMENTS" in str(refused.value) and "is_custom" in str(refused.value)
