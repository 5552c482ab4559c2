"""The PostgreSQL engine's connection settings: how long a request waits for a pooled connection before its 503
(SWITCHBOARD_DATABASE_POOL_TIMEOUT_S), how long the pool retries a lost connection by itself
(SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S), and libpq's connect timeout unless the URL sets its own."""

from __future__ import annotations

import pytest

from storage.layout import (DEFAULT_POOL_TIMEOUT_S, DEFAULT_RECONNECT_TIMEOUT_S, configured_pool_timeout_s,
                            configured_reconnect_timeout_s)
from storage.postgres import CONNECT_TIMEOUT_S, connect_options


@pytest.mark.parametrize("name, read, default", [
    ("SWITCHBOARD_DATABASE_POOL_TIMEOUT_S", configured_pool_timeout_s, DEFAULT_POOL_TIMEOUT_S),
    ("SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S", configured_reconnect_timeout_s, DEFAULT_RECONNECT_TIMEOUT_S),
])
def test_the_pool_waits_are_short_by_default_and_configurable(monkeypatch, name, read, default):
    """The wait for a connection (before a 503) and how long the pool retries a lost one by itself."""
    monkeypatch.delenv(name, raising=False)
    assert read() == default
    monkeypatch.setenv(name, "7.5")
    assert read() == 7.5
    monkeypatch.setenv(name, "soon")
    with pytest.raises(SystemExit, match=f"{name} must be a number"):
        read()


def test_libpq_gets_a_connect_timeout_unless_the_url_names_one():
    assert connect_options("postgresql://sb@db.internal/switchboard") == {"connect_timeout": CONNECT_TIMEOUT_S}
    assert connect_options("postgresql://sb@db.internal/switchboard?connect_timeout=9") == {}
    assert connect_options("host=/tmp/pg dbname=switchboard connect_timeout=1") == {}
