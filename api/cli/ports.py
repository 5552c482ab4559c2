"""A port that something already listens on is refused before a child is started on it, with one line naming the
port and the setting that moves it.

Why a check of our own: granian binds with SO_REUSEPORT, so a second `switchboard serve` on a port in use did not
fail: both instances listened, the kernel spread connections between them, and callers' valid keys got 401s from
the other instance's store. A Prefect server on a port in use failed to bind, but the supervisor's health check was
answered by the other instance ("Prefect server ready"), and the cause showed only in prefect-server.log; an
ordinary process on the API's port made granian print a 150-line traceback. The probe binds the address without
SO_REUSEPORT (with SO_REUSEADDR, so connections of a previous run in TIME_WAIT do not count): that fails while any
socket listens there, granian's included. A process that starts listening between the probe and the child's own
bind is not caught here; the supervisor then shows the child's last log lines (api/cli/processes.py).
"""

from __future__ import annotations

import errno
import socket
import time
from dataclasses import dataclass

IN_USE_MARKERS = ("address already in use", "[errno 98]", "eaddrinuse")


@dataclass(frozen=True)
class Listener:
    """Where a child will listen, and what a user changes to move it."""

    what: str  # "the API", "the Prefect server"
    host: str
    port: int
    setting: str  # "--port or SWITCHBOARD_PORT"

    def in_use_line(self) -> str:
        return (f"error: port {self.port} on {self.host} is already in use, so {self.what} cannot listen there "
                f"(another switchboard, or any other process, holds it): stop that process or set {self.setting} "
                "to a free port")


def in_use(host: str, port: int) -> bool:
    """Whether a socket listens on host:port (or holds it bound); False for an address this machine lacks, which
    the child itself then reports."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def refuse_if_in_use(listener: Listener, wait_s: float = 0.0) -> None:
    """SystemExit with the listener's one line when its port is in use. `wait_s`: how long a port may take to be
    free first (a restarted child's predecessor, killed a moment ago, may still hold it)."""
    deadline = time.monotonic() + wait_s
    while in_use(listener.host, listener.port):
        if time.monotonic() >= deadline:
            raise SystemExit(listener.in_use_line())
        time.sleep(0.2)


def says_in_use(lines: list[str]) -> bool:
    """Whether a child's last log lines say that its address was in use (its bind lost a race with the probe)."""
    return any(marker in line.lower() for line in lines for marker in IN_USE_MARKERS)
