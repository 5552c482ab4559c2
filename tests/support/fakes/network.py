"""A guard proving a test stays on this machine: any socket connect or DNS lookup beyond loopback fails the test."""

from __future__ import annotations

import socket
from typing import Any

import pytest

LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


def forbid_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Patch socket connects and lookups; returns the list of refused addresses (also raised at the caller)."""
    refused: list[Any] = []
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in LOCAL:
            refused.append(address)
            raise OSError(f"test tried to reach the network: {address}")
        return real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and str(host) not in LOCAL:
            refused.append(host)
            raise OSError(f"test tried to resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return refused
