"""Fuzz every operation of the service's own OpenAPI document with schemathesis (valid and invalid inputs, a valid
bearer key): never a 5xx, every error is the spec's envelope or the 422 validation shape, and every answer is
one the document declares (status code, content type, body schema).

Deterministic for CI: Hypothesis is derandomized (a fixed seed per operation) and keeps no example database. Flows
are never started: both launchers are fakes. The 500s found while hardening (JSON nested too deep, bodies that
are not UTF-8, a nested evaluation_config string) came from hand-written probes rather than from this generator;
they are plain tests in test_hostile_input.py.
"""

from __future__ import annotations

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.support.fakes.launcher import FakeLauncher

CONFORMANCE = [status_code_conformance, content_type_conformance, response_schema_conformance]
EXAMPLES = 12  # per operation and generation mode: ~14 operations x 2 modes, well inside the 60 s budget


def assert_error_shape(response) -> None:
    body = response.json()
    if response.status_code == 422 and "detail" in body:
        assert set(body) == {"detail"}, body
        assert body["detail"] and all(set(item) == {"loc", "msg", "type"} for item in body["detail"]), body
        return
    if body.get("type") == "error":  # POST /v1/messages: Anthropic's error shape (api/error_responses.py)
        assert set(body) == {"type", "error", "request_id"} and body["request_id"] == response.headers["x-request-id"]
        assert {"type", "message", "code"} <= set(body["error"]), body
        return
    assert set(body) == {"error"}, body
    error = body["error"]
    assert {"code", "message", "type", "request_id"} <= set(error), body
    assert isinstance(error["code"], str) and error["code"] and isinstance(error["message"], str), body
    assert error["request_id"] == response.headers["x-request-id"], body


@pytest.fixture
def fuzz_client(providers_reachable, client, issue_key):  # providers first: valid optimize bodies are accepted
    services = client.app.state.services
    services.authenticator.rate_limiter = None  # the fuzzer sends hundreds of requests on one key
    services.router_training.launcher = FakeLauncher()
    services.prompt_optimization.launcher = FakeLauncher()
    key = issue_key("fuzzer", tier="enterprise", prompt_optimization=True).key
    client.headers["Authorization"] = f"Bearer {key}"
    return client


def operations(client) -> list:
    schema = schemathesis.openapi.from_dict(client.get("/schema/openapi.json").json())
    return [result.ok() for result in schema.get_all_operations()]


def send(client, case):
    """Let schemathesis' own transport (requests) encode the case to bytes, then send exactly those bytes through
    the app's test client, which carries the fuzzer's key."""
    kwargs = case.as_transport_kwargs(base_url=str(client.base_url))
    kwargs.pop("cookies", None)
    prepared = requests.Request(**kwargs).prepare()
    headers = {k: v for k, v in prepared.headers.items() if k.lower() not in ("authorization", "content-length")}
    return client.request(prepared.method, prepared.url, headers=headers, content=prepared.body)


def test_openapi_document_lists_every_public_operation(fuzz_client):
    names = {op.definition.raw.get("operationId") for op in operations(fuzz_client)}
    assert {"modelSelect", "listModels", "userPreferenceCreate", "userPreferenceUpdate", "userPreferenceDelete",
            "optimize", "optimizeStatus", "optimizeResults", "optimizeCosts", "trainCustomRouter",
            "reportFeedback"} <= names


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_fuzz_every_operation(fuzz_client, mode):
    failures = []
    for op in operations(fuzz_client):

        @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy(generation_mode=mode))
        def run(case) -> None:
            response = send(fuzz_client, case)
            assert response.status_code < 500, (case.method, case.formatted_path, response.text[:500])
            # The answer is one the OpenAPI document declares: status, content type and body schema.
            case.validate_response(response, checks=CONFORMANCE)
            if response.status_code >= 400:
                assert_error_shape(response)

        try:
            run()
        except Exception as exc:  # collect every operation's failure, not only the first
            failures.append(f"{op.method.upper()} {op.path}: {exc}")
    assert not failures, "\n\n".join(failures)
