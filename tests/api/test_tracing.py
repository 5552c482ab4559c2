"""OpenTelemetry traces (api/observability/tracing.py): a routed, streamed gateway call whose first candidate fails
reaches an OTLP/HTTP receiver (decoding the protobuf, as a collector would) as one tree: the request's SERVER span,
continuing the caller's `traceparent`, over `auth`, `route` and two upstream attempts with GenAI attributes; the
attempts' contexts travel upstream. Without OTEL_* variables neither the SDK nor the exporter is loaded."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.settings import reset_settings
from tests.support.fakes.openai_server import FakeOpenAI
from tests.support.fakes.otlp_receiver import OtlpReceiver, ReceivedSpan

CALLER_TRACE, CALLER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
CHEAP_FIRST = {"llm_providers": ["openai/gpt-4o-mini", "openai/gpt-4.1-mini", "openai/gpt-4o"],
               "cost_quality_tradeoff": 10}  # ranked by price: gpt-4o-mini first
SECRET_QUESTION = "What is the capital of Italy? (a question no span may quote)"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def traced(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, str, FakeOpenAI,
                                                                               OtlpReceiver]]:
    from api.app import create_app

    receiver, fake = OtlpReceiver().start(), FakeOpenAI().start()
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50",
           "OTEL_SERVICE_NAME": "switchboard-under-test", "SWITCHBOARD_LLM_API_BASE": fake.base_url,
           "SWITCHBOARD_LLM_API_KEY": "sk-upstream-secret-0123456789"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    reset_settings()
    try:
        with TestClient(create_app(publish_owner=False), raise_server_exceptions=False) as client:
            key = client.app.state.services.store.accounts.issue_key("alice").key
            yield client, key, fake, receiver
    finally:
        fake.stop()
        receiver.stop()
        reset_settings()


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [s for s in spans if s.parent_span_id == parent.span_id and s.trace_id == parent.trace_id]


def test_a_streamed_call_with_a_fallback_is_one_tree_of_spans(traced):
    client, key, fake, receiver = traced
    fake.failing.add("gpt-4o-mini")
    answer = client.post("/v1/chat/completions",
                         headers={"Authorization": f"Bearer {key}",
                                  "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
                         json={"model": "switchboard", "stream": True, "messages": [
                             {"role": "user", "content": SECRET_QUESTION}], **CHEAP_FIRST})
    assert answer.status_code == 200 and "data: [DONE]" in answer.text

    def request_span(spans: list[ReceivedSpan]) -> ReceivedSpan | None:
        return next((s for s in spans if s.name == "POST /v1/chat/completions"), None)

    spans = receiver.wait_for(lambda got: request_span(got) is not None
                              and len(children(got, request_span(got))) >= 4)
    root = request_span(spans)
    assert root.trace_id == CALLER_TRACE and root.parent_span_id == CALLER_SPAN  # the caller's trace, continued
    assert root.kind == 2 and root.service == "switchboard-under-test"  # SERVER
    assert root.attributes["http.route"] == "/v1/chat/completions"
    assert root.attributes["http.response.status_code"] == 200
    assert root.attributes["switchboard.request_id"] == answer.headers["x-request-id"]

    under = children(spans, root)
    names = [s.name for s in under]
    assert names.count("auth") == 1 and names.count("route") == 1
    attempts = [s for s in under if s.name.startswith("chat ")]
    assert [s.name for s in attempts] == ["chat gpt-4o-mini", "chat gpt-4.1-mini"]
    failed, answered = attempts
    assert failed.kind == answered.kind == 3  # CLIENT
    assert failed.status_code == 2 and failed.attributes["error.type"] == "http_500"
    for attempt, model in ((failed, "gpt-4o-mini"), (answered, "gpt-4.1-mini")):
        assert attempt.attributes["gen_ai.operation.name"] == "chat"
        assert attempt.attributes["gen_ai.provider.name"] == "openai"
        assert attempt.attributes["gen_ai.request.model"] == model
    assert answered.status_code != 2 and answered.attributes["gen_ai.response.model"] == "gpt-4.1-mini"
    assert answered.attributes["gen_ai.usage.input_tokens"] > 0
    assert answered.attributes["gen_ai.usage.output_tokens"] > 0
    route = next(s for s in under if s.name == "route")
    assert route.attributes["switchboard.chosen"] == "openai/gpt-4o-mini"

    # each attempt's own context went upstream, in the caller's trace
    sent = dict(fake.traceparents)
    assert sent["gpt-4o-mini"] == f"00-{CALLER_TRACE}-{failed.span_id}-01"
    assert sent["gpt-4.1-mini"] == f"00-{CALLER_TRACE}-{answered.span_id}-01"
    # no prompt text and no key in any span
    everything = repr(spans)
    assert "capital of Italy" not in everything and key not in everything


def test_without_otel_variables_opentelemetry_is_never_imported(data_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(PYTHONPATH=str(REPO), SWITCHBOARD_DATA_DIR=str(data_dir))
    code = ("import sys\n"
            "from litestar.testing import TestClient\n"
            "from api.app import create_app\n"
            "with TestClient(create_app(publish_owner=False)) as c:\n"
            "    assert c.get('/health').status_code == 200\n"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    loaded = out.stdout.strip().splitlines()[-1]
    # Litestar's app factory itself looks for its OpenTelemetry plugin, which loads the namespace and a few attribute
    # names (opentelemetry.semconv; under a millisecond, once); the tracer, the SDK and the exporter stay out.
    for heavy in ("opentelemetry.trace", "opentelemetry.sdk", "opentelemetry.exporter", "opentelemetry.proto",
                  "opentelemetry.context"):
        assert f"'{heavy}" not in loaded, loaded
