"""Any OpenAI-compatible model as a target, origin, judge or reflection model, by its own name: custom entries in the
request (is_custom with prices and context length), each role on its own endpoint and key (server settings), the
caller's prices on every usage record and in the spend ceiling, and each record's role and latency in /costs.
Two fake OpenAI-compatible servers stand for a local model server and a hosted judge; the run is started and read
through the real app over HTTP, its flow run in-process."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from api.settings import reset_settings
from tests.support.fakes.network import forbid_network
from tests.support.fakes.openai_server import OBEY_PHRASE, FakeOpenAI, capital_goldens, teach_goldens
from tests.support.optimization import OPTIMIZE, body, run_flow

JUDGE_KEY, REFLECTION_KEY = "sk-judge-0123456789", "sk-reflection-0123456789"


def custom(provider: str, model: str, prices: tuple[float, float], context_length: int = 8192) -> dict:
    return {"provider": provider, "model": model, "is_custom": True, "input_price": prices[0],
            "output_price": prices[1], "context_length": context_length}


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    """A local model server for the `local` provider (targets) and the origin role, and a hosted judge/reflection
    server reached through the judge's and the reflection model's role settings, each with its own key. No
    service-wide base URL or provider key: nothing else is reachable. Request it before `client`."""
    local, hosted = FakeOpenAI().start(), FakeOpenAI().start()
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_TOKEN", "_API_BASE")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SWITCHBOARD_LOCAL_API_BASE", local.base_url)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_ORIGIN_API_BASE", local.base_url)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_JUDGE_API_BASE", hosted.base_url)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_JUDGE_API_KEY", JUDGE_KEY)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_REFLECTION_API_BASE", hosted.base_url)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_REFLECTION_API_KEY", REFLECTION_KEY)
    monkeypatch.setenv("SWITCHBOARD_LLM_RETRIES", "1")
    reset_settings()
    refused = forbid_network(monkeypatch)
    try:
        yield local, hosted
    finally:
        local.stop()
        hosted.stop()
        reset_settings()
    assert refused == [], f"a test reached beyond this machine: {refused}"


TARGET = custom("local", "smollm2-135m", (0.0, 0.0))
ORIGIN = custom("openai", "qwen2.5-0.5b", (1.0, 2.0))  # a provider's name, the caller's model and prices
JUDGE = custom("lab", "judge-7b", (0.5, 1.5))
REFLECTION = custom("lab", "writer-7b", (2.0, 4.0), context_length=4096)


@pytest.mark.usefixtures("prefect_harness")
def test_custom_models_on_their_own_endpoints(servers, client, launcher, optimizer_headers):
    local, hosted = servers
    train, test = capital_goldens(4), capital_goldens(5, start=4)
    teach_goldens(local, train + test)
    h = optimizer_headers()
    r = client.post(OPTIMIZE, headers=h, json=body(
        train_goldens=train, test_goldens=test, prototype_mode=True, target_models=[TARGET], origin_model=ORIGIN,
        judge_model=JUDGE, reflection_model=REFLECTION))
    assert r.status_code == 200, r.text
    run_id = r.json()["optimization_run_id"]
    state, _ = run_flow(run_id)
    assert state.is_completed(), state.message
    results = client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=h).json()
    [target] = results["target_models"]
    assert target["model_name"] == "local/smollm2-135m" and target["result_status"] == "completed"
    assert target["post_optimization_score"] == 1.0 > target["pre_optimization_score"]
    assert OBEY_PHRASE in target["system_prompt"].lower()
    assert results["origin_model"]["model_name"] == "openai/qwen2.5-0.5b"

    # Each model went to its own server, under its own name; the hosted one got each role's own key.
    assert {m for m, _ in local.keys} == {"smollm2-135m", "qwen2.5-0.5b"} and set(local.roles()) == {"target"}
    assert {m for m, _ in hosted.keys} == {"judge-7b", "writer-7b"}
    assert set(hosted.roles()) == {"judge", "reflection"}
    assert {(m, k) for m, k in hosted.keys} == {("judge-7b", f"Bearer {JUDGE_KEY}"),
                                                ("writer-7b", f"Bearer {REFLECTION_KEY}")}
    # The reflection model's replies are capped at half its 4,096-token context.
    assert {b.get("max_tokens") or b.get("max_completion_tokens") for b in hosted.bodies
            if b["model"] == "writer-7b"} == {2048}

    costs = client.get(f"/v2/prompt/optimize/{run_id}/costs", headers=h).json()
    records = costs["usage_records"]
    assert len(records) == len(local.calls) + len(hosted.calls)
    by_role = {r["role"] for r in records}
    assert by_role == {"target", "origin", "judge", "reflection"}
    prices = {"smollm2-135m": (0.0, 0.0), "qwen2.5-0.5b": (1.0, 2.0), "judge-7b": (0.5, 1.5), "writer-7b": (2.0, 4.0)}
    roles = {"smollm2-135m": "target", "qwen2.5-0.5b": "origin", "writer-7b": "reflection", "judge-7b": "judge"}
    for record in records:
        price_in, price_out = prices[record["model"]]
        assert record["input_cost"] == pytest.approx(record["input_tokens"] * price_in / 1e6)
        assert record["output_cost"] == pytest.approx(record["output_tokens"] * price_out / 1e6)
        assert record["role"] == roles[record["model"]] and record["latency_s"] >= 0
        assert record["task_type"] in ("pre-optimization evaluation", "optimization", "post-optimization evaluation")
    assert costs["total_cost"] > 0 and target["cost"] + results["origin_model"]["cost"] == pytest.approx(
        costs["total_cost"])


@pytest.mark.usefixtures("prefect_harness")
def test_the_spend_ceiling_counts_the_callers_prices(servers, client, launcher, optimizer_headers, monkeypatch):
    local, _ = servers
    train, test = capital_goldens(3), capital_goldens(3, start=3)
    teach_goldens(local, train + test)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_MAX_COST_USD", "0.01")
    reset_settings()
    dear = custom("local", "smollm2-135m", (5000.0, 5000.0))  # a few calls pass one cent
    r = client.post(OPTIMIZE, headers=optimizer_headers(), json=body(
        train_goldens=train, test_goldens=test, prototype_mode=True, target_models=[dear], judge_model=JUDGE,
        reflection_model=REFLECTION, evaluation_metric="Exact_Match"))
    assert r.status_code == 200, r.text
    state, _ = run_flow(r.json()["optimization_run_id"])
    assert state.is_failed() and "ceiling of $0.0100" in state.message


@pytest.fixture
def openai_served_locally(servers, monkeypatch: pytest.MonkeyPatch) -> FakeOpenAI:
    """The `openai` provider served by the local model server, and a $0.0001 spend ceiling. Request it before
    `client`."""
    monkeypatch.setenv("SWITCHBOARD_OPENAI_API_BASE", servers[0].base_url)
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_MAX_COST_USD", "0.0001")
    reset_settings()
    return servers[0]


@pytest.mark.usefixtures("prefect_harness")
def test_a_catalogue_model_described_as_custom_at_zero_is_billed_at_the_catalogues_price(
        openai_served_locally, client, launcher, optimizer_headers):
    """Issue 31, item 4: gpt-4o described as custom at $0 billed 29 gpt-4o calls at $0, so the spend ceiling never
    applied. It is billed at the catalogue's price (api/catalogue/pricing.py), and the ceiling stops the run."""
    from api.catalogue import load_catalogue

    train, test = capital_goldens(3), capital_goldens(3, start=3)
    teach_goldens(openai_served_locally, train + test)
    free_gpt4o = custom("openai", "gpt-4o", (0.0, 0.0))
    h = optimizer_headers()
    r = client.post(OPTIMIZE, headers=h, json=body(
        train_goldens=train, test_goldens=test, prototype_mode=True, target_models=[free_gpt4o], judge_model=JUDGE,
        reflection_model=REFLECTION, evaluation_metric="Exact_Match"))
    assert r.status_code == 200, r.text
    run_id = r.json()["optimization_run_id"]
    state, _ = run_flow(run_id)
    assert state.is_failed() and "ceiling of $0.0001" in state.message
    gpt4o = load_catalogue().get("openai", "gpt-4o")
    records = [r for r in client.get(f"/v2/prompt/optimize/{run_id}/costs", headers=h).json()["usage_records"]
               if r["model"] == "gpt-4o"]
    assert records and len(records) < 29
    for record in records:
        assert record["input_cost"] > 0
        assert record["input_cost"] == pytest.approx(record["input_tokens"] * gpt4o.input_price / 1e6)
        assert record["output_cost"] == pytest.approx(record["output_tokens"] * gpt4o.output_price / 1e6)


@pytest.mark.parametrize("entry, says", [
    ({"provider": "local", "model": "m", "is_custom": True, "input_price": 0}, "context_length, output_price"),
    ({**TARGET, "provider": "no/slash"}, "provider must be"),
    ({**TARGET, "base_url": "http://169.254.169.254/v1"}, "SWITCHBOARD_LOCAL_API_BASE"),
    ({"provider": "openai", "model": "gpt-4o-mini", "api_key": "sk-callers-own-key-0123"}, "service's settings"),
])
def test_custom_entries_are_checked(servers, client, launcher, optimizer_headers, entry, says):
    r = client.post(OPTIMIZE, headers=optimizer_headers(), json=body(target_models=[entry]))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "INVALID_CUSTOM_MODEL" and says in r.json()["error"]["message"]
    assert "169.254" not in r.text and "sk-callers-own-key" not in r.text  # neither followed nor echoed


def test_a_custom_model_without_an_endpoint_is_refused(servers, client, launcher, optimizer_headers):
    """The caller names the model; only the service's settings say where it is served."""
    r = client.post(OPTIMIZE, headers=optimizer_headers(), json=body(
        target_models=[custom("elsewhere", "m", (0, 0))], judge_model=JUDGE, reflection_model=REFLECTION))
    assert r.status_code == 400 and r.json()["error"]["code"] == "PROVIDER_NOT_CONFIGURED", r.text
    assert "SWITCHBOARD_ELSEWHERE_API_BASE" in r.json()["error"]["message"]


def test_per_role_timeouts_and_token_caps(monkeypatch):
    """Documented defaults (reflection 600 s and 2,048 tokens, judge 256 tokens, target 1,024, timeouts otherwise
    SWITCHBOARD_LLM_TIMEOUT_S), each overridden by its role's setting; a role's endpoint takes its own key only."""
    from api.settings import get_settings
    from flows.prompt_opt.llm import BilledLM
    from flows.prompt_opt.usage import Ledger

    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", "http://127.0.0.1:9/v1")  # never called
    monkeypatch.setenv("SWITCHBOARD_LLM_API_KEY", "sk-every-provider-0123")
    monkeypatch.setenv("SWITCHBOARD_LLM_TIMEOUT_S", "90")
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_JUDGE_API_BASE", "http://127.0.0.1:9/judge/v1")
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_TARGET_TIMEOUT_S", "900")
    monkeypatch.setenv("SWITCHBOARD_OPTIMIZE_JUDGE_MAX_TOKENS", "64")
    reset_settings()
    settings = get_settings().optimize

    def lm(role: str) -> BilledLM:
        return BilledLM(provider="local", model="m", prices=(0.0, 0.0), ledger=Ledger("run", "user", "org", 1.0),
                        task_type="optimization", position=0, role=role, settings=settings)

    got = {role: (lm(role).kwargs["timeout"], lm(role).kwargs["max_tokens"])
           for role in ("target", "origin", "judge", "reflection")}
    assert got == {"target": (900.0, 1024), "origin": (90.0, 1024), "judge": (90.0, 64), "reflection": (600.0, 2048)}
    judge, target = lm("judge"), lm("target")
    assert judge.kwargs["api_base"] == "http://127.0.0.1:9/judge/v1" and judge.kwargs["api_key"] == "unused"
    assert target.kwargs["api_base"] == "http://127.0.0.1:9/v1" and target.kwargs["api_key"] == "sk-every-provider-0123"
    reset_settings()
