"""Issue 31, item 12: `switchboard serve` (and `api`, `store`) refuses a port already in use with one line naming the
port and the setting to change, whether an ordinary process or another instance (granian binds with SO_REUSEPORT,
so it shared the port silently) holds it; and the supervisor shows a child's last log lines when it dies, instead
of "see logs". Each test binds the port itself."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.cli.ports import Listener, in_use, refuse_if_in_use
from api.cli.processes import Supervisor
from api.settings import get_settings
from tests.test_cli import SWITCHBOARD, env_for

REPO = Path(__file__).resolve().parents[1]


def listening(reuse_port: bool = False) -> socket.socket:
    """A socket listening on a free loopback port; with SO_REUSEPORT as granian binds (another instance)."""
    sock = socket.socket()
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.fixture
def held() -> Iterator[socket.socket]:
    sock = listening()
    yield sock
    sock.close()


def switchboard(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([SWITCHBOARD, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=env_for(tmp_path / "data", **env))


def assert_one_line(done: subprocess.CompletedProcess, port: int, setting: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    [line] = done.stderr.strip().splitlines()
    assert f"port {port} " in line and setting in line and "already in use" in line
    assert "ready" not in done.stdout and "all running" not in done.stdout  # nothing was started


@pytest.mark.parametrize("reuse_port", [False, True], ids=["ordinary-process", "another-instance"])
def test_serve_refuses_an_api_port_in_use(tmp_path: Path, reuse_port: bool) -> None:
    sock = listening(reuse_port)
    try:
        port = sock.getsockname()[1]
        done = switchboard(tmp_path, "serve", "--port", str(port))
    finally:
        sock.close()
    assert_one_line(done, port, "SWITCHBOARD_PORT")


def test_serve_refuses_a_prefect_port_in_use(tmp_path: Path, held: socket.socket) -> None:
    port = held.getsockname()[1]
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    api_port = free.getsockname()[1]
    free.close()
    done = switchboard(tmp_path, "serve", "--port", str(api_port), SWITCHBOARD_PREFECT_PORT=str(port))
    assert_one_line(done, port, "SWITCHBOARD_PREFECT_PORT")


@pytest.mark.parametrize("command, setting", [("api", "SWITCHBOARD_PORT"), ("store", "SWITCHBOARD_STORE_PORT")])
def test_api_and_store_refuse_a_port_another_instance_shares(tmp_path: Path, command: str, setting: str) -> None:
    sock = listening(reuse_port=True)  # as granian listens: a second granian would have joined it
    try:
        port = sock.getsockname()[1]
        done = switchboard(tmp_path, command, "--port", str(port))
    finally:
        sock.close()
    assert_one_line(done, port, setting)


def test_the_probe_sees_listeners_and_ignores_a_closed_port(held: socket.socket) -> None:
    port = held.getsockname()[1]
    assert in_use("127.0.0.1", port) and in_use("0.0.0.0", port)
    with pytest.raises(SystemExit) as refused:
        refuse_if_in_use(Listener("the API", "127.0.0.1", port, "--port or SWITCHBOARD_PORT"))
    assert str(port) in str(refused.value) and "SWITCHBOARD_PORT" in str(refused.value)
    held.close()
    assert not in_use("127.0.0.1", port)
    refuse_if_in_use(Listener("the API", "127.0.0.1", port, "--port or SWITCHBOARD_PORT"))  # free: no exit


def test_a_child_that_dies_while_starting_is_reported_with_its_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    log.write_text("an earlier run's line: not this run's\n")
    sup = Supervisor(get_settings())
    noise = "; ".join(f"print('noise {i}')" for i in range(40))
    child = sup.spawn("flow runner", [sys.executable, "-c", f"{noise}; raise SystemExit('boom: the real cause')"],
                      log)
    child.process.wait(timeout=30)
    with pytest.raises(SystemExit) as stopped:
        sup.wait_healthy(child, "http://127.0.0.1:9/health", timeout=30)
    report = str(stopped.value)
    assert "flow runner exited with code 1 while starting" in report and "boom: the real cause" in report
    assert str(log) in report and "earlier run" not in report and "noise 0" not in report  # the tail only
    assert "see " not in report


def test_a_child_that_lost_its_port_is_reported_in_one_line(tmp_path: Path, held: socket.socket) -> None:
    """A port taken between the probe and the child's own bind: uvicorn's error in the log becomes the one line."""
    port = held.getsockname()[1]
    log = tmp_path / "prefect-server.log"
    sup = Supervisor(get_settings())
    listener = Listener("the Prefect server", "127.0.0.1", port, "SWITCHBOARD_PREFECT_PORT")
    message = f"ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', {port}): address " \
              "already in use"
    child = sup.spawn("Prefect server", [sys.executable, "-c", f"print({message!r}); raise SystemExit(1)"], log,
                      listener=listener)
    child.process.wait(timeout=30)
    with pytest.raises(SystemExit) as stopped:
        sup.wait_healthy(child, f"http://127.0.0.1:{port}/api/health", timeout=30)
    assert str(stopped.value) == listener.in_use_line()
