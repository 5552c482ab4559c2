"""Numbers are bounded to what storage holds and types are strict: a value that does not fit, or arrives as the
wrong JSON type, is a 422 naming its field, never a coerced guess that is stored, and never a row that stops the
session log for everyone after it."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from storage import events
from tests.support.envelopes import assert_validation_body
from tests.support.optimization import OPTIMIZE
from tests.support.optimization import body as optimize_body
from tests.support.routes import SELECT

FEEDBACK = "/v2/report/metrics/feedback"
UPDATE = "/v2/preferences/userPreferenceUpdate"
PROVIDERS = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]


def select_body(**extra) -> dict:
    return {"messages": [{"role": "user", "content": "What is 2 + 2?"}], "llm_providers": PROVIDERS, **extra}


@pytest.fixture
def headers(client, auth) -> dict[str, str]:
    client.app.state.services.authenticator.rate_limiter = None
    return auth("alice", tier="enterprise", prompt_optimization=True)


def logged_session_ids(client) -> list[str]:
    services = client.app.state.services
    services.sessions.sessions.flush()
    return [sid for f in events.parts(services.settings.events_dir, "sessions")
            for sid in pq.read_table(f, columns=["session_id"]).column("session_id").to_pylist()]


@pytest.mark.parametrize("depth", [2**31, 2**63, 10**30, 0, -1])
def test_an_integer_beyond_its_column_is_a_422_and_later_sessions_are_written(client, headers, depth):
    refused = client.post(SELECT, json=select_body(max_model_depth=depth), headers=headers)
    assert assert_validation_body(refused)[0]["loc"] == ["body", "max_model_depth"]
    kept = [client.post(SELECT, json=select_body(max_model_depth=2), headers=headers).json()["session_id"]
            for _ in range(3)]
    assert set(kept) <= set(logged_session_ids(client))


@pytest.mark.parametrize("field, value", [
    ("cost_quality_tradeoff", "5"), ("cost_quality_tradeoff", "1e1"), ("cost_quality_tradeoff", 5.0),
    ("hash_content", "true"), ("hash_content", 1), ("max_model_depth", "3"),
])
def test_model_select_takes_no_coerced_values(client, headers, field, value):
    items = assert_validation_body(client.post(SELECT, json=select_body(**{field: value}), headers=headers))
    assert items[0]["loc"] == ["body", field]


@pytest.mark.parametrize("field, value", [
    ("input_price", 1e308), ("output_price", -1), ("latency", 1e9), ("context_length", 2**40),
])
def test_custom_model_figures_are_bounded(client, headers, field, value):
    custom = {"provider": "acme", "model": "m1", "is_custom": True, "context_length": 8192, "input_price": 1.0,
              "output_price": 2.0, "latency": 0.5, field: value}
    items = assert_validation_body(client.post(SELECT, json=select_body(llm_providers=[custom, PROVIDERS[0]]),
                                               headers=headers))
    assert items[0]["loc"] == ["body", "llm_providers", 0, field]


def test_feedback_accuracy_must_be_the_number_0_or_1(client, headers):
    sid = client.post(SELECT, json=select_body(), headers=headers).json()["session_id"]
    report = {"session_id": sid, "provider": PROVIDERS[0], "feedback": {"accuracy": "1"}}
    items = assert_validation_body(client.post(FEEDBACK, json=report, headers=headers))
    assert items[0]["loc"] == ["body", "feedback", "accuracy"]


def test_preference_fields_are_strict_too(client, headers):
    pid = client.post("/v2/preferences/userPreferenceCreate", json={}, headers=headers).json()["preference_id"]
    items = assert_validation_body(client.put(UPDATE, json={"preference_id": pid, "cost_quality_tradeoff": "5"},
                                              headers=headers))
    assert items[0]["loc"] == ["body", "cost_quality_tradeoff"]
    assert client.put(UPDATE, json={"preference_id": pid, "cost_quality_tradeoff": 5}, headers=headers).json()[
        "cost_quality_tradeoff"] == 5


@pytest.mark.parametrize("score", [-1, 1.5, 1e308])
def test_the_origin_score_is_on_the_metric_scale(client, headers, score):
    items = assert_validation_body(client.post(OPTIMIZE, json=optimize_body(origin_model_evaluation_score=score),
                                               headers=headers))
    assert items[0]["loc"] == ["body", "origin_model_evaluation_score"]


def test_a_wrong_value_in_a_golden_names_its_field(client, headers):
    body = optimize_body()
    body["train_goldens"][3]["fields"] = {"question": 7}
    items = assert_validation_body(client.post(OPTIMIZE, json=body, headers=headers))
    assert items[0]["loc"] == ["body", "train_goldens", 3, "fields", "question"]
    assert "Expected `str`, got `int`" in items[0]["msg"]
