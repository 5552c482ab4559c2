"""One access-log line per request, on the `switchboard.access` logger: method, route, status, duration, request id,
key prefix (the part `keys list` shows, too little to use), chosen model and upstream attempts; never prompt text,
never a key. SWITCHBOARD_LOG_FORMAT=json writes every log record as one JSON object (api/logging_setup.py)."""

from __future__ import annotations

import json
import logging
import sys
import time
from datetime import datetime, timezone
from typing import Any

from api.observability.exchange import Exchange

log = logging.getLogger("switchboard.access")
gateway_log = logging.getLogger("switchboard.gateway")

# Requests an orchestrator or a scraper sends every few seconds, and the store owner's routes that other workers
# call all the time (/internal/...): logged at DEBUG unless they fail, so that they do not bury the traffic.
PROBES = frozenset({"/health", "/ready", "/metrics"})
INTERNAL = "/internal/"


def fields_of(exchange: Exchange, route: str, now: float) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "method": exchange.method, "route": route, "status": exchange.status,
        "duration_ms": round((now - exchange.started) * 1000, 2), "request_id": exchange.request_id,
        "key": exchange.key_prefix}
    if exchange.error_code:
        fields["error"] = exchange.error_code
    if exchange.chosen or exchange.attempts:
        fields["model"] = exchange.chosen
        fields["attempts"] = len(exchange.attempts)
        fields["outcomes"] = ",".join(a.outcome or "open" for a in exchange.attempts)
    if exchange.overhead_s is not None:
        fields["overhead_ms"] = round(exchange.overhead_s * 1000, 2)
    return fields


def write(exchange: Exchange, route: str) -> None:
    routine = route in PROBES or route.startswith(INTERNAL)
    level = logging.DEBUG if routine and exchange.status < 400 else logging.INFO
    if not log.isEnabledFor(level):
        return
    fields = fields_of(exchange, route, time.perf_counter())
    text = " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
    # The record log.log() would make, without its walk up the stack to find this line (findCaller)
    record = log.makeRecord(log.name, level, __file__, sys._getframe().f_lineno, text, None, None, "write",
                            {"fields": fields})
    log.handle(record)


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON; an access line's fields become top-level keys."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname, "logger": record.name}
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        else:
            out["message"] = record.getMessage()
        if record.exc_info or record.exc_text:  # exc_text: rendered already (api/observability/log_queue.py)
            out["exception"] = record.exc_text or self.formatException(record.exc_info)
        return json.dumps(out, default=str)
