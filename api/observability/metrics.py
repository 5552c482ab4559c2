"""The Prometheus families (docs/operations.md has the table) and GET /metrics's text.

Label values are bounded: routes are templates (`/v2/preferences/{preference_id}`), models and providers are the
catalogue's (a custom model is "custom"), outcomes are classes; never a user, a key, a prompt. With several processes
(API workers, flow runs) prometheus_client's multiprocess mode adds up their files (api/observability/metrics_dir.py);
one process alone keeps its values in memory."""

from __future__ import annotations

import os
from typing import Any, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess

from api.observability.metrics_dir import ENV as MULTIPROC_ENV

PREFIX = "switchboard_"
# The classic text format generate_latest writes (Litestar adds the charset to text/* types).
CONTENT_TYPE = "text/plain; version=0.0.4"
# Seconds, from a cached decision (a millisecond) to a long generation (minutes).
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

HTTP_REQUESTS = Counter("switchboard_http_requests", "HTTP requests answered, by route template, method and status",
                        ["route", "method", "status"])
HTTP_DURATION = Histogram("switchboard_http_request_duration_seconds",
                          "Time from a request's arrival to its last byte sent", ["route", "method"], buckets=BUCKETS)
DECISIONS = Counter("switchboard_routing_decisions", "Routing decisions (modelSelect and the gateway's), by router "
                    "kind (default, custom) and chosen model", ["router", "model"])
DECISION_DURATION = Histogram("switchboard_routing_decision_duration_seconds", "Time one routing decision took",
                              ["router"], buckets=BUCKETS)
UPSTREAM_CALLS = Counter("switchboard_gateway_upstream_calls", "Upstream attempts by provider, model and outcome "
                         "(ok, timeout, connect, http_429, http_4xx, http_5xx, context_length, ...)",
                         ["provider", "model", "outcome"])
UPSTREAM_DURATION = Histogram("switchboard_gateway_upstream_duration_seconds", "One upstream attempt, from sending "
                              "the request to its answer's last byte", ["provider", "model"], buckets=BUCKETS)
UPSTREAM_FIRST_BYTE = Histogram("switchboard_gateway_upstream_first_byte_seconds", "One upstream attempt, from "
                                "sending the request to its answer's first byte (first event of a stream)",
                                ["provider", "model"], buckets=BUCKETS)
FALLBACKS = Counter("switchboard_gateway_fallbacks", "Attempts that failed and handed the request to the next "
                    "candidate, by the failed attempt's outcome", ["cause"])
TOKENS = Counter("switchboard_gateway_tokens", "Tokens of answered gateway calls, by model and direction "
                 "(input, output)", ["model", "direction"])
SPEND = Counter("switchboard_gateway_cost_usd", "Cost of answered gateway calls at catalogue prices, US dollars",
                ["model"])
OVERHEAD = Histogram("switchboard_gateway_overhead_seconds", "Time a gateway request spent in switchboard, "
                     "upstream attempts excluded (the x-switchboard-overhead-ms header), by whether it streamed",
                     ["stream"], buckets=OVERHEAD_BUCKETS)
REFUSALS = Counter("switchboard_refusals", "Requests refused for a limit, by error code (RATE_LIMITED, "
                   "BUDGET_EXCEEDED)", ["code"])
STORE_DURATION = Histogram("switchboard_store_call_duration_seconds", "Calls of this process into the system of "
                           "record, by domain and method", ["domain", "method"], buckets=BUCKETS)
STORE_ERRORS = Counter("switchboard_store_errors", "Calls into the system of record that raised, by domain and "
                       "method", ["domain", "method"])
# Counted by the flow run itself (flows/run_metrics.py). Every family has labels, so a process writes a values file
# only for the kinds it counts: a flow run adds one small counter file to run/metrics/, not one per kind.
FLOW_RUNS = Counter("switchboard_flow_runs", "Flow runs that reached a final state, by flow and state",
                    ["flow", "state"])

REFUSAL_CODES = frozenset({"RATE_LIMITED", "BUDGET_EXCEEDED"})
_KEPT_OUTCOMES = frozenset({"ok", "timeout", "connect", "transport", "http_429", "context_length",
                            "payload_too_large", "bad_response", "empty_stream", "error_event"})


Metric = TypeVar("Metric", Counter, Histogram)
_children: dict[tuple[object, tuple[str, ...]], Any] = {}


def labelled(metric: Metric, *values: str) -> Metric:
    """`metric.labels(*values)`, remembered: the look-up costs 2 us a call, twice or more per request, and label
    values are bounded so the cache is too."""
    child = _children.get((metric, values))
    if child is None:
        child = _children[(metric, values)] = metric.labels(*values)
    return child


def outcome_class(outcome: str) -> str:
    """An attempt's recorded outcome as a bounded label: HTTP statuses by class, 429 on its own."""
    if outcome in _KEPT_OUTCOMES:
        return outcome
    if outcome.startswith("http_") and outcome[5:].isdigit():
        return f"http_{outcome[5]}xx"
    return "other"


def model_labels(candidate: object | None) -> tuple[str, str]:
    """(provider, model) of a ResolvedCandidate: the catalogue's names; a caller's custom model is "custom"."""
    if candidate is None:
        return "none", "none"
    if getattr(candidate, "is_custom", False):
        return "custom", "custom"
    c = candidate.candidate  # type: ignore[attr-defined]
    return c.provider, c.key


def exposition() -> tuple[bytes, str]:
    """The text GET /metrics answers: every process's values when several write them, else this one's."""
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return _ours(generate_latest(registry)), CONTENT_TYPE
    return _ours(generate_latest(REGISTRY)), CONTENT_TYPE


def _ours(text: bytes) -> bytes:
    """Only switchboard's families: a library loaded in a worker or a flow run (Prefect's clients) may register its
    own, which are not this service's to publish."""
    keep, out = False, []
    for line in text.splitlines(keepends=True):
        if line.startswith(b"# HELP "):
            keep = line[7:].startswith(PREFIX.encode())
        if keep:
            out.append(line)
    return b"".join(out)
