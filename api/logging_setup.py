"""How the service's processes log: INFO for what an operator watching `make serve` should see (start-up, jobs,
refusals worth a look), and the HTTP clients' per-request lines at WARNING. httpx logs every request at INFO, and
each API worker polls the store owner's change feed twice a second: that chatter would bury everything else."""

from __future__ import annotations

from litestar.logging.config import LoggingConfig

QUIET_LOGGERS = ("httpx", "httpcore", "hpack", "urllib3")


def logging_config() -> LoggingConfig:
    loggers = {"litestar": {"level": "INFO", "handlers": ["queue_listener"], "propagate": False}}
    loggers.update({name: {"level": "WARNING", "propagate": True} for name in QUIET_LOGGERS})
    return LoggingConfig(loggers=loggers)
