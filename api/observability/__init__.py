"""What an operator watches the service by (docs/operations.md): Prometheus metrics (`metrics.py`, served at
GET /metrics), OpenTelemetry traces when the standard OTEL_* variables ask for them (`tracing.py`), and one access-log
line per request (`access_log.py`), all fed by one ASGI middleware (`middleware.py`) and a few calls from the gateway
and the decision path (`hooks.py`)."""
