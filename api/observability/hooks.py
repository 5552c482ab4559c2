"""The calls the rest of the API makes into telemetry: the gateway's upstream attempts and finished calls, the routing
decision, authentication and the store. Configured once per process at start-up (`configure`); with metrics off and
no tracing the gateway's hooks only note what the access line and the overhead header need, and the decision,
authentication and the store are not wrapped at all (api/app.py, api/startup.py)."""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import replace
from typing import Any

from api.observability import metrics as m
from api.observability.exchange import Attempt, current
from api.routing.policy import request_cost_usd

log = logging.getLogger("switchboard.gateway")
STORE_DOMAINS = ("accounts", "preferences", "jobs", "routers", "optimizations", "learning", "maintenance")


class _State:
    metrics = False
    tracing: Any = None


state = _State()


def configure(metrics: bool, tracing: Any) -> None:
    state.metrics, state.tracing = metrics, tracing


def attempt_began(candidate: Any, endpoint: Any) -> Any:
    """An upstream attempt starts: returns the endpoint to call, carrying the attempt's `traceparent` when tracing.
    A failed attempt before this one is a fallback, counted by its cause."""
    exchange = current()
    if exchange is None:
        return endpoint
    provider, model = m.model_labels(candidate)
    if exchange.attempts and state.metrics:
        m.labelled(m.FALLBACKS, m.outcome_class(exchange.attempts[-1].outcome or "other")).inc()
    attempt = Attempt(provider, model, time.perf_counter())
    exchange.attempts.append(attempt)
    if state.tracing is not None:
        c = candidate.candidate
        attempt.span, headers = state.tracing.start_client(
            f"chat {c.model}", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": c.provider,
                                "gen_ai.request.model": c.model, "switchboard.attempt": len(exchange.attempts)})
        endpoint = replace(endpoint, headers={**endpoint.headers, **headers})
    return endpoint


def attempt_ended(outcome: str, stream: bool) -> None:
    """An attempt failed, or its answer began (a stream's first event; a whole answer otherwise)."""
    exchange = current()
    if exchange is None or not exchange.attempts:
        return
    attempt = exchange.attempts[-1]
    attempt.waited_s, attempt.outcome = time.perf_counter() - attempt.began, outcome
    labels = (attempt.provider, attempt.model)
    if state.metrics:
        if outcome == "ok":
            m.labelled(m.UPSTREAM_FIRST_BYTE, *labels).observe(attempt.waited_s)
        if outcome != "ok" or not stream:  # a stream's attempt is counted when it ends (call_finished)
            m.labelled(m.UPSTREAM_CALLS, *labels, m.outcome_class(outcome)).inc()
            m.labelled(m.UPSTREAM_DURATION, *labels).observe(attempt.waited_s)
    if outcome != "ok":
        log.warning("upstream attempt failed: request_id=%s attempt=%d model=%s outcome=%s",
                    exchange.request_id, len(exchange.attempts), attempt.model, outcome)
        if attempt.span is not None:
            state.tracing.failed(attempt.span, outcome)
    if attempt.span is not None and (outcome != "ok" or not stream):
        attempt.span.end()


def call_finished(call: Any) -> None:
    """A gateway call is over (answered, refused or failed): tokens, spend, the stream's own end."""
    exchange = current()
    answered = call.answered
    if exchange is not None:
        exchange.chosen = answered.candidate.key if answered is not None else call.chosen
        last = exchange.attempts[-1] if exchange.attempts else None
        if last is not None and last.outcome == "ok" and call.stream:
            _stream_ended(last, call)
        elif last is not None and last.span is not None and answered is not None:
            _usage(last.span, call)
    if answered is None or not state.metrics:
        return
    _, model = m.model_labels(answered)
    m.labelled(m.TOKENS, model, "input").inc(call.input_tokens)
    m.labelled(m.TOKENS, model, "output").inc(call.output_tokens)
    c = answered.candidate
    m.labelled(m.SPEND, model).inc(float(request_cost_usd(c.input_price, c.output_price, call.input_tokens,
                                                     call.output_tokens)))


def _stream_ended(attempt: Attempt, call: Any) -> None:
    outcome = call.status if call.status in ("ok", "stream_error", "client_closed") else "other"
    if state.metrics:
        labels = (attempt.provider, attempt.model)
        m.labelled(m.UPSTREAM_CALLS, *labels, outcome).inc()
        m.labelled(m.UPSTREAM_DURATION, *labels).observe(time.perf_counter() - attempt.began)
    if outcome == "stream_error":
        log.warning("upstream stream broke: request_id=%s model=%s", current().request_id,  # type: ignore[union-attr]
                    attempt.model)
    if attempt.span is not None:
        if outcome != "ok":
            state.tracing.failed(attempt.span, outcome)
        _usage(attempt.span, call)


def _usage(span: Any, call: Any) -> None:
    if call.answered is not None:
        span.set_attribute("gen_ai.response.model", call.answered.candidate.model)
    span.set_attribute("gen_ai.usage.input_tokens", call.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", call.output_tokens)
    span.end()


def observe_calls(calls: Any) -> None:
    """The gateway's call log (api/gateway/calls.py) tells telemetry when each call is over. Every call reaches its
    `log`, once: an answer once sent, and through `record` a failure or a stream's end (tests/api/test_observability.py
    counts each kind exactly, so a second path would show)."""
    write = calls.log

    def observed(call: Any) -> None:
        call_finished(call)
        write(call)

    calls.log = observed


def observe_decisions(selection: Any) -> None:
    """Every routing decision (modelSelect's and the gateway's: one path, SelectionService.decide) counted by router
    kind and chosen model, timed, and traced as the request's `route` span."""
    decide = selection.decide

    @functools.wraps(decide)
    def observed(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        if state.tracing is None:
            selected = decide(*args, **kwargs)
        else:
            with state.tracing.child("route", **{"switchboard.operation": "modelSelect"}) as span:
                selected = decide(*args, **kwargs)
                span.set_attribute("switchboard.router", selected.router)
                span.set_attribute("switchboard.chosen", selected.ranked[0].candidate.key)
                span.set_attribute("switchboard.candidates", len(selected.ranked))
        if state.metrics:
            m.labelled(m.DECISIONS, selected.router, m.model_labels(selected.ranked[0])[1]).inc()
            m.labelled(m.DECISION_DURATION, selected.router).observe(time.perf_counter() - began)
        return selected

    selection.decide = observed


def traced_auth(dependency: Any) -> Any:
    """The `user` dependency inside an `auth` span."""

    @functools.wraps(dependency)
    async def traced(*args: Any, **kwargs: Any) -> Any:
        with state.tracing.child("auth"):
            return await dependency(*args, **kwargs)

    return traced


class _TimedDomain:
    """One domain of the store (storage/interfaces.py), each method call timed and its errors counted."""

    def __init__(self, name: str, domain: Any) -> None:
        self._name, self._domain = name, domain

    def __getattr__(self, method: str) -> Any:
        found = getattr(self._domain, method)
        if not callable(found) or method.startswith("_"):
            return found
        duration, errors = m.STORE_DURATION.labels(self._name, method), m.STORE_ERRORS.labels(self._name, method)

        @functools.wraps(found)
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return found(*args, **kwargs)
            except Exception:
                errors.inc()
                raise
            finally:
                duration.observe(time.perf_counter() - began)

        setattr(self, method, timed)  # found by attribute look-up next time, not __getattr__
        return timed


def observe_store(store: Any) -> None:
    for name in STORE_DOMAINS:
        domain = getattr(store, name, None)
        if domain is not None:
            setattr(store, name, _TimedDomain(name, domain))
