"""A real Prometheus server scrapes a running `switchboard serve` (with its bearer token) and PromQL returns the
counts this test caused: modelSelect requests and decisions, gateway calls, one fallback, upstream attempts by
outcome, tokens and spend, the overhead histogram, and flow runs by final state (the scheduled housekeeping run,
counted in its own process and added up by the API's GET /metrics). Skipped, saying why, where Debian's `prometheus`
package is not installed (`make test` installs it when it runs as root with apt)."""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest

from tests.support.metrics import value
from tests.support.prometheus import Prometheus, prometheus_binary
from tests.support.service import free_port, start_service, wait_for_api

pytestmark = pytest.mark.e2e
NO_PROMETHEUS = pytest.mark.skipif(
    prometheus_binary() is None,
    reason="Debian's prometheus package is not installed (`make test` installs it when root with apt-get)")

TOKEN = "scrape-token-e2e-0123456789"
SELECT = {"llm_providers": [{"provider": "openai", "model": m} for m in ("gpt-4o-mini", "gpt-4.1-mini", "gpt-4o")],
          "cost_quality_tradeoff": 10}  # ranked by price: gpt-4o-mini first
CHEAP_FIRST = {"llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4o"],
               "cost_quality_tradeoff": 10}
ASK = [{"role": "user", "content": "What is the capital of Italy?"}]
SELECTS, GATEWAY_CALLS = 5, 3


@NO_PROMETHEUS
def test_prometheus_scrapes_serve_and_counts_what_was_sent(tmp_path, monkeypatch, fake_llm_server):
    for name, value in {"SWITCHBOARD_METRICS_TOKEN": TOKEN, "SWITCHBOARD_HOUSEKEEPING_INTERVAL_S": "5",
                        "SWITCHBOARD_LLM_API_BASE": fake_llm_server.base_url}.items():
        monkeypatch.setenv(name, value)  # inherited by serve, its API and its flow runs
    api_port = free_port()
    service = start_service(tmp_path / "data", api_port, free_port())
    prometheus = None
    fake_llm_server.failing.clear()
    try:
        prometheus = Prometheus(tmp_path / "prometheus", f"127.0.0.1:{api_port}", token=TOKEN)
        with httpx.Client(base_url=service.api_url, headers=service.headers, timeout=60) as http:
            for _ in range(SELECTS):
                assert http.post("/v2/modelRouter/modelSelect", json={"messages": ASK, **SELECT}).status_code == 200
            input_tokens = output_tokens = 0
            for n in range(GATEWAY_CALLS):
                if n == 0:
                    fake_llm_server.failing.add("gpt-4o-mini")  # one fallback, to gpt-4.1-mini
                answer = http.post("/v1/chat/completions",
                                   json={"model": "switchboard", "messages": ASK, **CHEAP_FIRST})
                fake_llm_server.failing.clear()
                assert answer.status_code == 200, answer.text
                input_tokens += answer.json()["usage"]["prompt_tokens"]
                output_tokens += answer.json()["usage"]["completion_tokens"]
            assert http.get("/metrics").status_code == 401  # the token is needed

        def expect(promql: str, value: float) -> None:
            assert prometheus.wait_for(promql, value) == value, promql

        expect('up{job="switchboard"}', 1)
        expect('sum(switchboard_http_requests_total{route="/v2/modelRouter/modelSelect",status="200"})', SELECTS)
        expect('sum(switchboard_http_requests_total{route="/v1/chat/completions",method="POST",status="200"})',
               GATEWAY_CALLS)
        expect('sum(switchboard_routing_decisions_total{router="default"})', SELECTS + GATEWAY_CALLS)
        expect('sum(switchboard_gateway_upstream_calls_total{model="openai/gpt-4o-mini",outcome="http_5xx"})', 1)
        expect('sum(switchboard_gateway_upstream_calls_total{outcome="ok"})', GATEWAY_CALLS)
        expect('sum(switchboard_gateway_fallbacks_total{cause="http_5xx"})', 1)
        expect('sum(switchboard_gateway_tokens_total{direction="input"})', input_tokens)
        expect('sum(switchboard_gateway_tokens_total{direction="output"})', output_tokens)
        expect('sum(switchboard_gateway_overhead_seconds_count)', GATEWAY_CALLS)
        expect('count(sum by (model) (switchboard_gateway_cost_usd_total) > 0)', 2)  # the 2 models that answered
        expect('sum(switchboard_http_request_duration_seconds_count{route="/v2/modelRouter/modelSelect"})', SELECTS)
        assert (prometheus.query('sum(switchboard_store_call_duration_seconds_count{domain="accounts"})') or 0) > 0
        # a flow run's own process counted its end; the API's /metrics added it to the workers' values
        assert prometheus.wait_for(
            'clamp_max(sum(switchboard_flow_runs_total{flow="housekeeping",state="completed"}), 1)', 1,
            timeout=150) == 1
    finally:
        if prometheus is not None:
            prometheus.stop()
        service.stop()


def test_two_api_workers_add_up_in_one_scrape(tmp_path):
    """`switchboard api --workers 2` behind `switchboard store`: whichever worker answers GET /metrics, it counts every
    request both workers served (prometheus_client's multiprocess mode, run/metrics/)."""
    from api.cli.processes import Child
    from storage.store import LocalStore
    from tests.support.service import BIN

    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    store = LocalStore(data_dir / "switchboard.duckdb")
    key = store.accounts.issue_key("alice").key
    store.close()
    store_port, api_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env.update(SWITCHBOARD_DATA_DIR=str(data_dir), LITELLM_LOCAL_MODEL_COST_MAP="True")
    children = []
    try:
        for name, argv in (("store", ["store", "--port", str(store_port)]),
                           ("api", ["api", "--workers", "2", "--port", str(api_port)])):
            with open(tmp_path / f"{name}.log", "wb") as log:
                children.append(Child(name, subprocess.Popen([str(BIN / "switchboard"), *argv], env=env, stdout=log,
                                                             stderr=subprocess.STDOUT, start_new_session=True)))
            wait_for_api(f"http://127.0.0.1:{store_port if name == 'store' else api_port}", timeout=90)
        base = f"http://127.0.0.1:{api_port}"
        for _ in range(SELECTS * 4):  # a new connection each: granian's workers take turns accepting them
            answer = httpx.post(f"{base}/v2/modelRouter/modelSelect", json={"messages": ASK, **SELECT},
                                headers={"Authorization": f"Bearer {key}"}, timeout=60)
            assert answer.status_code == 200, answer.text
        files = {p.name for p in (data_dir / "run" / "metrics").glob("counter_*.db")}
        assert len(files) >= 2, files  # both workers counted something
        for _ in range(6):  # each scrape, whichever worker takes it, sees both workers' counts
            text = httpx.get(f"{base}/metrics", timeout=30).text
            assert value(text, "switchboard_http_requests_total", route="/v2/modelRouter/modelSelect",
                         status="200") == SELECTS * 4
    finally:
        for child in reversed(children):
            child.stop(timeout=30)
