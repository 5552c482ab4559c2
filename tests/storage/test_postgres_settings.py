"""The PostgreSQL engine's connection settings: how long a request waits for a pooled connection before its 503
(SWITCHBOARD_DATABASE_POOL_TIMEOUT_S), how long the pool retries a lost connection by itself
(SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S), and libpq's connect timeout unless the URL sets its own."""

from __future__ import annotations

import pytest

from storage.layout import (DEFAULT_POOL_TIMEOUT_S, DEFAULT_RECONNECT_TIMEOUT_S, configured_pool_timeout_s,
                            configured_reconnect_timeout_s)
from storage.postgres import CONNECT_TIMEOUT_S, connect_options


def test_the_pool_wait_is_short_by_default_and_configurable(monkeypatch):
    monkeypatch.delenv("SWITCHBOARD_DATABASE_POOL_TIMEOUT_S", raising=False)
    assert configured_pool_timeout_s() == DEFAULT_POOL_TIMEOUT_S
    monkeypatch.setenv("SWITCHBOARD_DATABASE_POOL_TIMEOUT_S", "7.5")
    assert configured_pool_timeout_s() == 7.5
    monkeypatch.setenv("SWITCHBOARD_DATABASE_POOL_TIMEOUT_S", "soon")
    with pytest.raises(SystemExit, match="SWITCHBOARD_DATABASE_POOL_TIMEOUT_S must be a number"):
        configured_pool_timeout_s()


def test_the_pool_gives_a_lost_connection_up_soon_by_default_and_it_is_configurable(monkeypatch):
    monkeypatch.delenv("SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S", raising=False)
    assert configured_reconnect_timeout_s() == DEFAULT_RECONNECT_TIMEOUT_S
    monkeypatch.setenv("SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S", "300")
    assert configured_reconnect_timeout_s() == 300.0
    monkeypatch.setenv("SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S", "later")
    with pytest.raises(SystemExit, match="SWITCHBOARD_DATABASE_RECONNECT_TIMEOUT_S must be a number"):
        configured_reconnect_timeout_s()


def test_libpq_gets_a_connect_timeout_unless_the_url_names_one():
    assert connect_options("postgresql://sb@db.internal/switchboard") == {"connect_timeout": CONNECT_TIMEOUT_S}
    assert connect_options("postgresql://sb@db.internal/switchboard?connect_timeout=9") == {}
    assert connect_options("host=/tmp/pg dbname=switchboard connect_timeout=1") == {}
