"""How the service's processes log: INFO for what an operator watching `make serve` should see (start-up, jobs,
refusals worth a look, one access line per request: api/observability/access_log.py), and the HTTP clients'
per-request lines at WARNING. httpx logs every request at INFO, and each API worker polls the store owner's change
feed twice a second: that chatter would bury everything else. SWITCHBOARD_LOG_LEVEL moves the service's own level;
SWITCHBOARD_LOG_FORMAT=json writes one JSON object per record, for a log collector."""

from __future__ import annotations

from litestar.logging.config import LoggingConfig

QUIET_LOGGERS = ("httpx", "httpcore", "hpack", "urllib3")
JSON_FORMATTER = "api.observability.access_log.JsonFormatter"
# Litestar's default `queue_listener` handler, replaced by one that formats and writes on its writer thread
QUEUE_HANDLER = {"()": "api.observability.log_queue.DeferredFormatHandler", "level": "DEBUG", "formatter": "standard"}


def logging_config(level: str = "INFO", fmt: str = "text") -> LoggingConfig:
    loggers = {"litestar": {"level": level, "handlers": ["queue_listener"], "propagate": False},
               "switchboard": {"level": level, "propagate": True}}
    loggers.update({name: {"level": "WARNING", "propagate": True} for name in QUIET_LOGGERS})
    options: dict = {"loggers": loggers, "root": {"handlers": ["queue_listener"], "level": level},
                     "handlers": {"queue_listener": dict(QUEUE_HANDLER)}}
    if fmt == "json":
        options["formatters"] = {"standard": {"()": JSON_FORMATTER}}
    return LoggingConfig(**options)
