"""What an operator watches the service by (docs/operations.md): GET /metrics's families count what was sent, the
gateway's upstream attempts, fallbacks, tokens and spend by model; x-switchboard-overhead-ms on gateway answers; one
access-log line per request (a 502 found by its request id); GET /health. The real app in process, providers played
by the fake OpenAI server; values compared as deltas (the process's counters outlive one test)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from litestar.testing import TestClient

from api.observability.access_log import JsonFormatter
from api.settings import reset_settings
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.metrics import value

TOKEN = "scrape-token-0123456789"
CHEAP_FIRST = {"llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4o"],
               "cost_quality_tradeoff": 10}  # ranked by price: gpt-4o-mini first (tests/gateway/test_fallbacks.py)
ASK = [{"role": "user", "content": "What is the capital of Italy?"}]
SELECT = {"llm_providers": [{"provider": "openai", "model": m} for m in ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4o")],
          "cost_quality_tradeoff": 10}
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


def app_client(monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAI, **env: str) -> TestClient:
    from api.app import create_app

    monkeypatch.setenv("SWITCHBOARD_LLM_API_BASE", fake.base_url)
    monkeypatch.setenv("SWITCHBOARD_LLM_API_KEY", "sk-upstream-secret-0123456789")
    monkeypatch.setenv("SWITCHBOARD_SESSION_FLUSH_SECONDS", "0.2")
    for name, setting in env.items():
        monkeypatch.setenv(name, setting)
    reset_settings()
    return TestClient(create_app(publish_owner=False), raise_server_exceptions=False)


@pytest.fixture
def observed(data_dir: Path, monkeypatch: pytest.MonkeyPatch, fake: FakeOpenAI) -> Iterator[tuple[TestClient, dict]]:
    fake.failing.clear()
    with app_client(monkeypatch, fake, SWITCHBOARD_METRICS_TOKEN=TOKEN) as client:
        key = client.app.state.services.store.accounts.issue_key("alice").key
        yield client, {"Authorization": f"Bearer {key}"}
    fake.failing.clear()


def scrape(client: TestClient) -> str:
    response = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return response.text


def test_health_answers_without_a_key(observed):
    client, _ = observed
    response = client.get("/health")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    assert response.headers["x-request-id"]


def test_metrics_need_the_configured_token(observed):
    client, _ = observed
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = client.get("/metrics", headers=headers)
        assert refused.status_code == 401, headers
        assert refused.json()["error"]["code"] == "UNAUTHORIZED" and TOKEN not in refused.text
    assert "switchboard_http_requests_total" in scrape(client)


def test_request_and_decision_families_count_what_was_sent(observed):
    client, headers = observed
    before = scrape(client)
    chosen = []
    for _ in range(3):
        answer = client.post("/v2/modelRouter/modelSelect", headers=headers, json={"messages": ASK, **SELECT})
        assert answer.status_code == 200, answer.text
        chosen.append(f"{answer.json()['providers'][0]['provider']}/{answer.json()['providers'][0]['model']}")
    gone = client.delete("/v2/preferences/userPreferenceDelete/pref-that-is-not-there", headers=headers)
    assert gone.status_code == 404
    assert client.get("/no/such/route").status_code == 404
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("switchboard_http_requests_total", route="/v2/modelRouter/modelSelect", method="POST",
                 status="200") == 3
    assert delta("switchboard_http_request_duration_seconds_count", route="/v2/modelRouter/modelSelect") == 3
    assert delta("switchboard_http_requests_total", method="DELETE", status="404",
                 route="/v2/preferences/userPreferenceDelete/{preference_id}") == 1
    # route templates and "unmatched", never the path a caller made up
    assert delta("switchboard_http_requests_total", route="unmatched", status="404") == 1
    assert "pref-that-is-not-there" not in after and "/no/such/route" not in after
    assert delta("switchboard_routing_decisions_total", router="default", model=chosen[0]) == 3
    assert delta("switchboard_routing_decision_duration_seconds_count", router="default") == 3
    assert value(after, "switchboard_store_call_duration_seconds_count", domain="accounts") > 0
    assert headers["Authorization"].split()[1] not in after and "alice" not in after


@pytest.mark.parametrize("stream", [False, True])
def test_gateway_families_and_overhead_header(observed, fake, stream):
    client, headers = observed
    fake.failing.add("gpt-4o-mini")
    before = scrape(client)
    body = {"model": "switchboard", "messages": ASK, "stream": stream, **CHEAP_FIRST}
    answer = client.post("/v1/chat/completions", headers=headers, json=body)
    assert answer.status_code == 200, answer.text
    overhead_ms = float(answer.headers["x-switchboard-overhead-ms"])
    assert overhead_ms >= 0
    after = scrape(client)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    first, second = "openai/gpt-4o-mini", "openai/gpt-4.1-mini"
    assert delta("switchboard_gateway_upstream_calls_total", provider="openai", model=first, outcome="http_5xx") == 1
    assert delta("switchboard_gateway_upstream_calls_total", provider="openai", model=second, outcome="ok") == 1
    assert delta("switchboard_gateway_fallbacks_total", cause="http_5xx") == 1
    assert delta("switchboard_gateway_upstream_duration_seconds_count", model=second) == 1
    assert delta("switchboard_gateway_upstream_first_byte_seconds_count", model=second) == 1
    tokens_in = delta("switchboard_gateway_tokens_total", model=second, direction="input")
    tokens_out = delta("switchboard_gateway_tokens_total", model=second, direction="output")
    assert tokens_in > 0 and tokens_out > 0
    assert delta("switchboard_gateway_cost_usd_total", model=second) > 0
    assert delta("switchboard_gateway_overhead_seconds_count", stream="true" if stream else "false") == 1
    assert delta("switchboard_http_requests_total", route="/v1/chat/completions", status="200") == 1


def test_a_502_is_one_access_line_found_by_its_request_id(observed, fake, caplog):
    client, headers = observed
    fake.failing.update({"gpt-4o-mini", "gpt-4.1-mini", "gpt-4o"})
    with caplog.at_level(logging.INFO, logger="switchboard"):
        failed = client.post("/v1/chat/completions", headers=headers,
                             json={"model": "switchboard", "messages": ASK, **CHEAP_FIRST})
    assert failed.status_code == 502
    assert float(failed.headers["x-switchboard-overhead-ms"]) >= 0
    request_id = failed.headers["x-request-id"]
    lines = [r for r in caplog.records if r.name == "switchboard.access" and request_id in r.getMessage()]
    assert len(lines) == 1
    fields = lines[0].fields
    assert fields["status"] == 502 and fields["route"] == "/v1/chat/completions" and fields["method"] == "POST"
    assert fields["error"] == "UPSTREAM_FAILED" and fields["attempts"] == 3
    assert fields["outcomes"] == "http_500,http_500,http_500" and fields["duration_ms"] > 0
    key = headers["Authorization"].split()[1]
    assert fields["key"] == key[:9] and key not in lines[0].getMessage()
    failures = [r for r in caplog.records if r.name == "switchboard.gateway" and request_id in r.getMessage()]
    assert len(failures) == 3 and all("outcome=http_500" in r.getMessage() for r in failures)
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "capital of Italy" not in text and key not in text


def test_store_calls_are_timed_and_their_errors_counted():
    from api.observability import hooks
    from api.observability.metrics import exposition

    class Jobs:
        def get(self, job_id: str) -> str:
            return job_id

        def update(self, job_id: str) -> None:
            raise ConnectionError("the store owner does not answer")

    store = SimpleNamespace(jobs=Jobs())
    hooks.observe_store(store)
    before = exposition()[0].decode()
    assert store.jobs.get("j1") == "j1"
    with pytest.raises(ConnectionError):
        store.jobs.update("j1")
    after = exposition()[0].decode()
    for name, method, change in (("switchboard_store_call_duration_seconds_count", "get", 1),
                                 ("switchboard_store_call_duration_seconds_count", "update", 1),
                                 ("switchboard_store_errors_total", "update", 1),
                                 ("switchboard_store_errors_total", "get", 0)):
        assert value(after, name, domain="jobs", method=method) - value(before, name, domain="jobs",
                                                                         method=method) == change


def test_rate_limit_refusals_are_counted(data_dir, monkeypatch, fake):
    with app_client(monkeypatch, fake, SWITCHBOARD_RATE_LIMIT_PER_MINUTE="1",
                    SWITCHBOARD_RATE_LIMIT_BURST="1") as client:
        key = client.app.state.services.store.accounts.issue_key("bob").key
        before = client.get("/metrics").text
        codes = [client.get("/v1/models", headers={"Authorization": f"Bearer {key}"}).status_code for _ in range(3)]
        after = client.get("/metrics").text
    assert codes == [200, 429, 429]
    assert (value(after, "switchboard_refusals_total", code="RATE_LIMITED")
            - value(before, "switchboard_refusals_total", code="RATE_LIMITED")) == 2


def test_metrics_off_removes_the_route_not_the_header(data_dir, monkeypatch, fake):
    with app_client(monkeypatch, fake, SWITCHBOARD_METRICS="0") as client:
        key = client.app.state.services.store.accounts.issue_key("carol").key
        assert client.get("/metrics").status_code == 404
        answer = client.post("/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                             json={"model": "switchboard", "messages": ASK, **CHEAP_FIRST})
        assert answer.status_code == 200 and float(answer.headers["x-switchboard-overhead-ms"]) >= 0


def test_json_log_lines_carry_the_access_fields():
    record = logging.LogRecord("switchboard.access", logging.INFO, __file__, 1, "method=GET", None, None)
    record.fields = {"method": "GET", "route": "/health", "status": 200, "request_id": "r-1"}
    line = json.loads(JsonFormatter().format(record))
    assert line["level"] == "INFO" and line["logger"] == "switchboard.access"
    assert {k: line[k] for k in ("method", "route", "status", "request_id")} == record.fields
    plain = logging.LogRecord("switchboard.api", logging.WARNING, __file__, 1, "store %s", ("down",), None)
    assert json.loads(JsonFormatter().format(plain))["message"] == "store down"


def test_log_settings_are_checked(monkeypatch):
    from api.logging_setup import JSON_FORMATTER, logging_config
    from api.settings import get_settings

    monkeypatch.setenv("SWITCHBOARD_LOG_LEVEL", "debug")
    monkeypatch.setenv("SWITCHBOARD_LOG_FORMAT", "JSON")
    reset_settings()
    settings = get_settings()
    assert (settings.log_level, settings.log_format) == ("DEBUG", "json")
    config = logging_config(settings.log_level, settings.log_format)
    assert config.formatters["standard"] == {"()": JSON_FORMATTER}
    assert config.loggers["switchboard"]["level"] == "DEBUG"
    monkeypatch.setenv("SWITCHBOARD_LOG_LEVEL", "loud")
    reset_settings()
    with pytest.raises(SystemExit, match="SWITCHBOARD_LOG_LEVEL"):
        get_settings()
    reset_settings()


def test_metrics_add_up_across_worker_processes(tmp_path):
    """Several API workers (or flow runs) each write their values; GET /metrics in any one of them adds all up."""
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(tmp_path), PYTHONPATH=str(REPO))
    count = ("from api.observability import metrics as m; "
             "m.HTTP_REQUESTS.labels('/v2/modelSelect', 'POST', '200').inc({n}); "
             "m.FLOW_RUNS.labels('optimize-prompt', 'completed').inc()")
    for n in (2, 5):
        subprocess.run([sys.executable, "-c", count.format(n=n)], env=env, check=True, cwd=REPO)
    text = subprocess.run([sys.executable, "-c", "import sys; from api.observability.metrics import exposition; "
                           "sys.stdout.write(exposition()[0].decode())"], env=env, check=True, cwd=REPO,
                          capture_output=True, text=True).stdout
    assert value(text, "switchboard_http_requests_total", route="/v2/modelSelect", status="200") == 7
    assert value(text, "switchboard_flow_runs_total", flow="optimize-prompt", state="completed") == 2
    assert "process_cpu_seconds_total" not in text  # only switchboard's families
