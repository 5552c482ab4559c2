"""The service's log says what matters: HTTP client chatter (the change-feed poll, twice a second per worker) is
not logged at INFO."""

from __future__ import annotations

import logging

import httpx

from api.app import create_app
from api.logging_setup import QUIET_LOGGERS


def test_http_client_requests_are_not_logged_at_info(client, caplog):
    assert client.app.logging_config is not None
    with caplog.at_level(logging.DEBUG):
        caplog.clear()
        for name in QUIET_LOGGERS:
            assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
        transport = httpx.MockTransport(lambda request: httpx.Response(200, json={}))
        with httpx.Client(transport=transport) as http:
            http.get("http://owner.invalid/internal/changes?since=3")  # what the change-feed poll sends
    assert not [r for r in caplog.records if r.name.startswith("httpx") and r.levelno >= logging.INFO]


def test_the_owner_app_logs_the_same_way(data_dir):
    from api.owner_app import create_owner_app

    assert create_owner_app().logging_config.loggers["httpx"]["level"] == "WARNING"
    assert create_app().logging_config.loggers["httpcore"]["level"] == "WARNING"
