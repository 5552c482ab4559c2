"""Issue 31, items 3 and 10: model and provider names are checked at the edge on every endpoint that takes one
(printable, no control characters, a length bound; any script allowed), refused with the spec's 422 naming the rule
in words, and anchored patterns end in \\Z: a `$` let "openai/gpt-4o\\n" through as a judge model."""

from __future__ import annotations

import pytest

from api.schemas.common import printable_name
from tests.support.optimization import body as optimize_body

SELECT = "/v2/modelRouter/modelSelect"
UPDATE = "/v2/preferences/userPreferenceUpdate"
ASK = [{"role": "user", "content": "What is 2 + 2?"}]
BAD = {"crlf": "m\r\nx: 1", "lf": "m\n", "nul": "m\x00", "del": "m\x7f", "u2028": "m\u2028", "u2029": "m\u2029",
       "bidi": "m\u202e", "bom": "\ufeffm", "c1": "m\x85"}


def custom(model: str, provider: str = "acme") -> dict:
    return {"provider": provider, "model": model, "is_custom": True, "context_length": 8000, "input_price": 1.0,
            "output_price": 2.0, "latency": 1.0}


@pytest.fixture
def headers(client, auth) -> dict[str, str]:
    client.app.state.services.authenticator.rate_limiter = None
    return auth("alice", tier="enterprise", prompt_optimization=True)


def refused_in_words(r) -> None:
    assert r.status_code == 422, r.text
    [item] = r.json()["detail"]
    assert item["loc"][0] == "body" and "printable" in item["msg"] and "regex" not in item["msg"]


def test_the_rule_allows_any_script_and_refuses_invisible_or_control_characters() -> None:
    assert all(printable_name(n) for n in ("gpt-4o", "модель", "模型 v2", "model-😀", "a b", "x" * 256))
    assert not any(printable_name(n) for n in (*BAD.values(), "", "x" * 257))


@pytest.mark.parametrize("field", ["model", "provider"])
@pytest.mark.parametrize("kind", sorted(BAD))
def test_model_select_refuses_a_name_with_control_characters(client, headers, field, kind):
    entry = custom("house")
    entry[field] = BAD[kind]
    refused_in_words(client.post(SELECT, headers=headers, json={"messages": ASK, "llm_providers": [entry]}))


def test_model_select_accepts_a_name_in_any_script(client, headers):
    r = client.post(SELECT, headers=headers, json={"messages": ASK, "llm_providers": [custom("модель"),
                                                                                     custom("模型-😀")]})
    assert r.status_code == 200, r.text
    assert r.json()["providers"][0]["model"] in {"модель", "模型-😀"}


def test_a_name_longer_than_the_bound_is_refused(client, headers):
    r = client.post(SELECT, headers=headers, json={"messages": ASK, "llm_providers": [custom("x" * 257)]})
    assert r.status_code == 422 and "length" in r.json()["detail"][0]["msg"]


@pytest.mark.parametrize("value", ["openai/gpt-4o\n", "openai/gpt-4o\x00", "openai/gpt\u20284o", "openai/\x7f"])
@pytest.mark.parametrize("field", ["judge_model", "llm_providers"])
def test_a_preference_refuses_a_model_name_with_a_final_newline_or_control_characters(client, headers, field,
                                                                                      value):
    pid = client.post("/v2/preferences/userPreferenceCreate", headers=headers, json={}).json()["preference_id"]
    r = client.put(UPDATE, headers=headers, json={"preference_id": pid,
                                                  field: [value] if field == "llm_providers" else value})
    assert r.status_code == 422, r.text
    stored = client.app.state.services.store.preferences.get("alice", pid)
    assert getattr(stored, field) is None  # nothing stored
    ok = client.put(UPDATE, headers=headers, json={"preference_id": pid, "judge_model": "openai/gpt-4o"})
    assert ok.status_code == 200 and ok.json()["judge_model"] == "openai/gpt-4o"


@pytest.mark.parametrize("field", ["model", "provider"])
def test_prompt_optimization_refuses_a_name_with_control_characters(client, headers, providers_reachable, field):
    entry = {"provider": "openai", "model": "gpt-4o-mini"}
    entry[field] += "\r\n"
    r = client.post("/v2/prompt/optimize", headers=headers, json=optimize_body(target_models=[entry]))
    refused_in_words(r)


def test_feedback_refuses_a_name_with_control_characters(client, headers):
    r = client.post("/v2/report/metrics/feedback", headers=headers, json={
        "session_id": "s1", "provider": {"provider": "openai", "model": "gpt-4o\n"}, "feedback": {"accuracy": 1}})
    refused_in_words(r)


def test_a_tool_name_with_a_final_newline_is_refused(client, headers):
    tool = {"type": "function", "function": {"name": "get_weather\n", "parameters": {"type": "object"}}}
    r = client.post(SELECT, headers=headers, json={"messages": ASK, "tools": [tool],
                                                   "llm_providers": [{"provider": "openai", "model": "gpt-4o"}]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_TOOLS", r.text


def test_router_training_refuses_a_name_with_control_characters(client, headers):
    providers = '[{"provider": "openai", "model": "gpt-4o\\u2028"}]'
    r = client.post("/v2/pzn/trainCustomRouter", headers=headers,
                    files={"dataset_file": ("e.csv", b"prompt\n", "text/csv")}, data={"language": "english", "llm_providers": providers, "prompt_column": "prompt",
                          "maximize": "true"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "INVALID_LLM_PROVIDERS" and "printable" in error["message"] and "regex" not in r.text
