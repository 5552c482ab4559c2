"""An OTLP/HTTP trace receiver (POST /v1/traces, protobuf), as a collector would be: it decodes each export with
opentelemetry-proto and keeps the spans, so a test can check the tree the service sent."""

from __future__ import annotations

import gzip
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: int
    status_code: int  # 0 unset, 1 ok, 2 error
    attributes: dict[str, Any]
    service: str


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> "OtlpReceiver":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (ExportTraceServiceRequest,
                                                                               ExportTraceServiceResponse)

        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.headers.get("content-encoding") == "gzip":
                    raw = gzip.decompress(raw)
                request = ExportTraceServiceRequest.FromString(raw)
                receiver._keep(request)
                body = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200 if self.path == "/v1/traces" else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _keep(self, request: Any) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    with self._lock:
                        self.spans.append(ReceivedSpan(
                            span.name, span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex(),
                            span.kind, span.status.code, {a.key: _value(a.value) for a in span.attributes},
                            str(resource.get("service.name"))))

    def wait_for(self, predicate: Any, timeout: float = 15.0) -> list[ReceivedSpan]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                spans = list(self.spans)
            if predicate(spans):
                return spans
            time.sleep(0.05)
        raise AssertionError(f"the spans expected did not arrive within {timeout} s: {spans}")

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
