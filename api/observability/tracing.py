"""OpenTelemetry traces, on when the standard OTEL_* variables name an OTLP endpoint (api/settings.py decides);
otherwise nothing of OpenTelemetry is imported and every hook is a `None` check.

One SERVER span per request (the caller's `traceparent` continued), children for authentication, the routing
decision and each upstream attempt (a CLIENT span whose context travels upstream in `traceparent`). Attributes
follow the GenAI semantic conventions (gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model,
gen_ai.response.model, gen_ai.usage.input_tokens / output_tokens); prompt and answer text are never recorded."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Tracing:
    """The tracer provider and its OTLP/HTTP exporter (endpoint, headers, service name, sampler: OTEL_* variables,
    read by the SDK itself)."""

    def __init__(self) -> None:
        # lazy: OpenTelemetry's SDK and exporter load only where tracing is configured (zero cost otherwise)
        from opentelemetry import context, propagate, trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self._context, self._propagate, self._trace = context, propagate, trace
        resource = Resource.create({"service.name": "switchboard"}).merge(Resource.create())  # OTEL_SERVICE_NAME wins
        self.provider = TracerProvider(resource=resource)
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self.tracer = self.provider.get_tracer("switchboard")
        self.server, self.client = trace.SpanKind.SERVER, trace.SpanKind.CLIENT

    def request_span(self, scope: Any) -> tuple[Any, Any]:
        """The request's span, made current (its token detaches it), continuing the caller's trace if it sent one."""
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())
                   if k in (b"traceparent", b"tracestate")}
        parent = self._propagate.extract(carrier) if carrier else None
        method = scope.get("method", "GET")
        span = self.tracer.start_span(method, context=parent, kind=self.server,
                                      attributes={"http.request.method": method, "url.path": scope.get("path", "")})
        token = self._context.attach(self._trace.set_span_in_context(span))
        return span, token

    def request_ended(self, span: Any, token: Any, route: str, status: int, request_id: str | None) -> None:
        span.update_name(f"{span.attributes.get('http.request.method', '')} {route}")
        span.set_attribute("http.route", route)
        span.set_attribute("http.response.status_code", status)
        if request_id:
            span.set_attribute("switchboard.request_id", request_id)
        if status >= 500:
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        span.end()
        self._context.detach(token)

    @contextmanager
    def child(self, name: str, **attributes: Any) -> Iterator[Any]:
        with self.tracer.start_as_current_span(name, attributes=attributes) as span:
            yield span

    def start_client(self, name: str, attributes: dict[str, Any]) -> tuple[Any, dict[str, str]]:
        """An upstream attempt's span (not made current: the attempt may end in another callback) and the headers
        that carry its context to the provider."""
        span = self.tracer.start_span(name, kind=self.client, attributes=attributes)
        headers: dict[str, str] = {}
        self._propagate.inject(headers, context=self._trace.set_span_in_context(span))
        return span, headers

    def failed(self, span: Any, reason: str) -> None:
        span.set_attribute("error.type", reason)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, reason))

    def shutdown(self) -> None:
        self.provider.shutdown()  # exports what is still batched
